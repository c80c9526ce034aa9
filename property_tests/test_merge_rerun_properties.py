"""What merge reruns cost, in `runner report`: the nodes' figures add up to the run's, and a
run's report is its report without the reruns' flags plus the merge reruns' own section — so
a run that had none reports exactly as it did before they were counted."""

from __future__ import annotations

import math
import re
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history.records import ErrorKind, ExecutionHistory, ExecutionRecord, TokenUsage
from runner_core.json_form import json_form
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.report import (
    RunFigures,
    build_report,
    merge_rerun_lines,
    render_report,
)
from tests.helpers.records import record
from tests.helpers.trees import tree

SETTINGS = settings(max_examples=200, deadline=None)
NODES = ("root.1", "root.2", "root.3", "gone")
TREE = tree("root", *(tree(node_id, order=n) for n, node_id in enumerate(NODES[:3])))

tokens = st.none() | st.builds(TokenUsage, st.integers(0, 10**6), st.integers(0, 10**6))
costs = st.none() | st.floats(0, 100, allow_nan=False, allow_infinity=False)


@st.composite
def iteration(draw: st.DrawFn, number: int) -> ExecutionRecord:
    """One iteration: a pass, an agent's retry, or a runner error that may be a merge rerun."""
    kind = draw(st.sampled_from(("pass", "retry", "runner")))
    changes: dict[str, Any] = {
        "duration_ms": draw(st.integers(0, 10**7)),
        "tokens": draw(tokens),
        "cost_usd": draw(costs),
    }
    if kind == "runner":
        changes |= {
            "error_kind": ErrorKind.RUNNER,
            "error": "runner error",
            "merge_rerun": draw(st.booleans()),
        }
    status = AgentStatus.DONE if kind == "pass" else AgentStatus.RETRY
    guard = GuardOutcome.PASS if kind == "pass" else GuardOutcome.SKIPPED
    made = record(number, draw(st.sampled_from(NODES)), status, guard, **changes)
    return attrs.evolve(made, attempts_after=made.attempts_before) if kind == "runner" else made


@st.composite
def histories(draw: st.DrawFn) -> ExecutionHistory:
    count = draw(st.integers(0, 12))
    return ExecutionHistory.of(draw(iteration(number)) for number in range(1, count + 1))


def figures(history: ExecutionHistory) -> RunFigures:
    return RunFigures(
        run_id="run-1",
        history=history,
        tree=TREE,
        next_iteration=len(history) + 1,
        max_iterations=100,
    )


def without_flags(history: ExecutionHistory) -> ExecutionHistory:
    return ExecutionHistory(tuple(attrs.evolve(r, merge_rerun=False) for r in history.records))


@SETTINGS
@given(histories())
def test_the_nodes_merge_reruns_add_up_to_the_runs(history: ExecutionHistory) -> None:
    report = build_report(figures(history))
    total = report.summary.merge_reruns
    nodes = [row.stats.merge_reruns for row in report.nodes]
    assert sum(node.count for node in nodes) == total.count
    assert total.count == sum(1 for r in history.records if r.merge_rerun)
    assert sum(node.duration_ms for node in nodes) == total.duration_ms
    summed = TokenUsage()
    for node in nodes:
        summed += node.tokens
    assert summed == total.tokens
    node_costs = [node.cost_usd for node in nodes if node.cost_usd is not None]
    assert (total.cost_usd is None) == (not node_costs)
    if total.cost_usd is not None:
        assert math.isclose(math.fsum(node_costs), total.cost_usd, rel_tol=1e-12, abs_tol=1e-12)


@SETTINGS
@given(histories())
def test_a_report_is_the_one_without_reruns_plus_their_section(history: ExecutionHistory) -> None:
    report = build_report(figures(history))
    plain = build_report(figures(without_flags(history)))
    assert merge_rerun_lines(plain) == []
    section = merge_rerun_lines(report)
    lines = render_report(report)
    if section:
        start = lines.index("merge reruns:")
        assert lines[start : start + len(section)] == section
        del lines[start : start + len(section)]
    # A merge's rerun is a runner error shown as `conflict`; counted apart by
    # kind, its words differ from the unflagged history's `runner_error`, its totals do not.
    assert [_one_word(line) for line in lines] == [_one_word(x) for x in render_report(plain)]
    document = json_form(report)
    assert ("merge_reruns" in document) == bool(section)
    document.pop("merge_reruns", None)
    flagged, unflagged = document.pop("attempts"), json_form(plain)
    kinds, plain_kinds = flagged.pop("runner_errors"), unflagged.pop("attempts")
    assert sum(kinds.values()) == sum(plain_kinds.pop("runner_errors").values())
    assert flagged == plain_kinds
    for rows in (document["slowest"], unflagged["slowest"]):
        for row in rows:
            row["status"] = _one_word(row["status"])
    assert document == unflagged


def _one_word(text: str) -> str:
    """`text` with a conflict's word and count said as any runner error's (and its columns'
    widths, which the longer word changes, left out)."""
    text = " ".join(re.sub(r"\bconflict\b", "runner_error", text).split())
    match = re.search(
        r"\(runner_error=(\d+) interrupted=(\d+) rate_limited=(\d+) runner_error=(\d+)", text
    )
    if match is None:
        return text
    total = sum(int(group) for group in match.groups())
    return text[: match.start()] + f"(runner errors={total}" + text[match.end() :]
