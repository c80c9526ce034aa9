"""Properties of reading the agent CLIs' output: codex's failure is its turn.failed message
whatever events came around it, and claude's result object is found behind any stray lines."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.claude import claude_result
from runner_core.backends.codex import CodexEnding

messages = st.text(min_size=1).filter(lambda text: text.strip() != "")
other_events = st.one_of(
    st.builds(lambda m: {"type": "error", "message": m}, st.text()),
    st.builds(lambda m: {"type": "item.completed", "item": {"text": m}}, st.text()),
    st.just({"type": "turn.started"}),
)


@given(st.lists(other_events), messages, st.lists(other_events))
def test_codex_fails_with_its_turn_failed_message(
    before: list[dict[str, Any]], message: str, after: list[dict[str, Any]]
) -> None:
    """Whatever error or other events surround it, turn.failed's message is the failure."""
    ending = CodexEnding()
    for event in [*before, {"type": "turn.failed", "error": {"message": message}}, *after]:
        ending = ending.after(event)
    assert ending.failure == message


@given(st.lists(st.text(alphabet=st.characters(exclude_characters="{\n")), max_size=5))
def test_claude_result_is_found_after_stray_lines(stray: list[str]) -> None:
    """Lines without a brace printed before the result object never hide it."""
    result = {"type": "result", "is_error": True, "result": "You've hit your 5-hour limit"}
    stdout = "".join(f"{line}\n" for line in stray) + json.dumps(result) + "\n"
    assert claude_result(stdout) == result
