"""Limit recognition from a whole CLI output, as the agent session reads it piece by piece.

The shell reads codex's stream event by event and claude's result object from its file; these
compose the same core functions over a whole text, so a test states an output and its limit.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from runner_core.backends.agent_results import CodexEnding, claude_result, codex_event

from runner_core.loop.usage_limits import LimitSignal, claude_result_limit, codex_message_limit


def codex_limit(stream: str, now: datetime, tz: tzinfo) -> LimitSignal | None:
    """The limit `codex exec --json` output (its JSONL stdout) ended on, if any. `tz` is the
    zone of codex's clock (its TZ): the reset time it prints has no zone name."""
    ending = CodexEnding()
    for line in stream.splitlines():
        event = codex_event(line)
        ending = ending if event is None else ending.after(event)
    return None if ending.failure is None else codex_message_limit(ending.failure, now, tz)


def claude_limit(stdout: str, now: datetime, tz: tzinfo) -> LimitSignal | None:
    """The limit `claude -p --output-format json` output ended on, if any."""
    return claude_result_limit(claude_result(stdout), now, tz)
