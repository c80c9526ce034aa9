"""A limit read off a whole agent output at once, for tests of the backends' recognisers: the
shell reads claude's result file and codex's stream as they come (runner_shell/agents), through
the same functions."""

from __future__ import annotations

from datetime import datetime, tzinfo

from runner_core.backends.claude import claude_result, claude_result_limit
from runner_core.backends.codex import CodexEnding, codex_event, codex_message_limit
from runner_core.backends.limits import LimitSignal


def claude_limit(stdout: str, now: datetime, tz: tzinfo) -> LimitSignal | None:
    """The limit `claude -p --output-format json` output ended on, if any."""
    return claude_result_limit(claude_result(stdout), now, tz)


def codex_limit(stream: str, now: datetime, tz: tzinfo) -> LimitSignal | None:
    """The limit `codex exec --json` output (its JSONL stdout) ended on, if any: the limit its
    failure (`CodexEnding`) reports. `tz` is the zone of codex's clock (its TZ): the reset time
    it prints has no zone name."""
    ending = CodexEnding()
    for line in stream.splitlines():
        event = codex_event(line)
        ending = ending if event is None else ending.after(event)
    return None if ending.failure is None else codex_message_limit(ending.failure, now, tz)
