"""The `opencode` backend: `opencode run --format json` (OpenCode), its JSONL events kept
beside the iteration.

Runs OpenCode headless with its permission prompts auto-approved (`--auto`), the prompt on stdin,
and leaves the run's final JSON at RUNNER_OUTPUT_PATH: the file the agent wrote itself, else the
last JSON object of its last text part. Never decides what an event means
(runner_core.backends.opencode does).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from runner_core.backends.opencode import OpencodeSession, opencode_event, opencode_limit
from runner_core.backends.registry import agent_argv
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    agent_run,
    read_text,
    run_keeping_stdout,
)
from runner_shell.agents.event_streams import fold_event_file, settle_output

# `run`: one message (stdin, when no message is given), then exit; JSON events on stdout.
_OPENCODE_ARGS = ("run", "--format", "json", "--auto")


@attrs.frozen(slots=True)
class OpencodeBackend:
    """`opencode run --format json --auto`; tokens and cost summed over its step_finish events."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "opencode"

    def argv(self) -> tuple[str, ...]:
        return (*agent_argv(self.name, self.command), *_OPENCODE_ARGS)

    def run(self, request: AgentRequest) -> AgentRun:
        process, stream_path = run_keeping_stdout(request, self.argv(), "opencode_events.jsonl")
        session = fold_event_file(stream_path, OpencodeSession(), _fold)
        error = None if session.error is None else session.error
        problem = settle_output(
            "opencode", error, session.last_text, request.output_path, "last text"
        )
        text: str | None = None
        if problem is None:
            text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        limit = opencode_limit(session.error) if process.exit_code != 0 else None
        return agent_run(process, text, problem, session.usage, limit)


def _fold(session: OpencodeSession, line: bytes) -> OpencodeSession:
    event = opencode_event(line)
    return session if event is None else session.after(event)
