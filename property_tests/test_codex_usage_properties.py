"""Property of codex's usage: whatever events come, in any order, a count is the sum of the valid
counts its turn.completed events reported (None when none did), and codex never reports a cost."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.codex import usage_after
from runner_core.backends.usage import Usage

KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")
counts = st.one_of(
    st.integers(min_value=-5, max_value=10**9), st.booleans(), st.none(), st.floats(), st.text()
)
usages = st.dictionaries(st.sampled_from(KEYS), counts)
events = st.one_of(
    st.builds(lambda usage: {"type": "turn.completed", "usage": usage}, usages),
    st.builds(lambda usage: {"type": "turn.completed", "usage": [usage]}, usages),
    st.builds(lambda usage: {"type": "item.completed", "usage": usage}, usages),
    st.just({"type": "turn.completed"}),
)


def _valid(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@given(st.lists(events, max_size=8))
def test_codex_usage_is_the_sum_of_the_valid_counts_of_its_completed_turns(
    stream: list[dict[str, Any]],
) -> None:
    usage = Usage()
    for event in stream:
        usage = usage_after(usage, event)
    for key in KEYS:
        reported = [
            event["usage"][key]
            for event in stream
            if event["type"] == "turn.completed"
            and isinstance(event.get("usage"), dict)
            and _valid(event["usage"].get(key))
        ]
        assert getattr(usage, key) == (sum(reported) if reported else None)
    assert usage.cost_usd is None
