"""The quick check of a meta.json (runner_core.history.meta_shape) never says yes to a document
its schema refuses, and says yes to every record the runner writes: so reading a record reads
it, and words a damaged one, exactly as the schema alone did."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runner_core.history.meta_shape import plainly_valid
from runner_core.history.records import record_from_meta, record_to_meta
from runner_core.validation.documents import META_SCHEMA_FILE, document_problem

FIGURES = (
    "passed",
    "failed",
    "skipped",
    "total",
    "newly_passing",
    "regressed",
    "removed",
    "targets_passed",
    "targets_total",
)

# Values near and off each field's edges: wrong types, bools for ints, floats for ints, empties.
odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "done", "pass", "executor", "agent", "runner", "fail"]),
    st.just([]),
    st.just(["a"]),
    st.just([1]),
    st.just({}),
)

tokens = st.one_of(
    st.none(),
    st.fixed_dictionaries({"input": st.integers(0, 9), "output": st.integers(0, 9)}).map(
        lambda d: {**d, "cached": 0}
    ),
    st.dictionaries(st.sampled_from(["input", "output", "cached", "other"]), odd_values),
)

tests = st.one_of(
    st.fixed_dictionaries(
        {name: st.integers(0, 5) for name in FIGURES}
        | {"flaky": st.lists(st.text(max_size=3)), "reasons": st.lists(st.text(max_size=3))}
    ),
    st.dictionaries(st.sampled_from([*FIGURES, "flaky", "reasons"]), odd_values),
    odd_values,
)


def valid_meta() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "run_id": st.text(min_size=1, max_size=5),
            "iter": st.integers(1, 50),
            "node_id": st.text(min_size=1, max_size=5),
            "role": st.sampled_from(["decomposer", "executor"]),
            "status": st.sampled_from(["done", "retry", "decomposed"]),
            "guard": st.sampled_from(["pass", "fail", "skipped"]),
            "execution": st.integers(1, 5),
            "started_at": st.just("2026-01-01T00:00:00.000Z"),
            "ended_at": st.just("2026-01-01T00:00:01.000Z"),
            "duration_ms": st.integers(0, 10_000),
            "error_kind": st.sampled_from([None, "agent", "runner"]),
            "error": st.one_of(st.none(), st.text(max_size=5)),
            "tokens": tokens,
            "cost_usd": st.one_of(st.none(), st.floats(min_value=0, max_value=10)),
            "attempts_before": st.integers(0, 3),
            "attempts_after": st.integers(0, 4),
            "backend": st.sampled_from(["command", "codex"]),
        },
        optional={
            "tests": tests,
            "extra": odd_values,
            "merge_rerun": st.booleans(),
            "merge_session": st.sampled_from(["resolved", "gave_up", "rejected", "guard_failed"]),
            "prompt_template": st.text("0123456789abcdef", min_size=64, max_size=64),
        },
    )


@st.composite
def metas(draw: st.DrawFn) -> Any:
    """A plausible meta.json with up to three fields replaced, removed or made odd."""
    meta = draw(valid_meta())
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(sorted(meta)))
        if draw(st.booleans()):
            del meta[key]
        else:
            meta[key] = draw(odd_values)
    return draw(st.one_of(st.just(meta), st.just(meta), odd_values))


@given(metas())
def test_a_quick_yes_is_the_schemas_yes(meta: Any) -> None:
    if plainly_valid(meta):
        assert document_problem(META_SCHEMA_FILE, meta) is None


@given(valid_meta())
def test_every_record_the_runner_writes_is_read_by_the_quick_check(meta: dict[str, Any]) -> None:
    meta.pop("extra", None)
    try:
        record = record_from_meta(meta)
    except ValueError:
        return  # a document the record's own rules refuse (say, error_kind without error)
    written = record_to_meta(record)
    assert plainly_valid(written)
    if record.cost_usd is not None:
        assert math.isfinite(record.cost_usd)
