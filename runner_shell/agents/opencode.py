"""The `opencode` backend: `opencode run --format json` (OpenCode), its JSONL events kept
beside the iteration.

Runs OpenCode headless with its permission prompts auto-approved (`--auto`), the prompt on stdin,
and leaves the run's final JSON at RUNNER_OUTPUT_PATH: the file the agent wrote itself, else the
last JSON object of its last text part. Never decides what an event means
(runner_core.backends.opencode does).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs

from runner_core.backends.claude import last_json_object
from runner_core.backends.opencode import OpencodeSession, opencode_event, opencode_limit
from runner_core.backends.registry import agent_argv
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    agent_run,
    excerpt,
    read_text,
    run_keeping_stdout,
)
from runner_shell.agents.codex import _bounded_lines
from runner_shell.store.files import atomic_write_text, open_regular

_EVENT_LINE_LIMIT_BYTES = 4 * 1024 * 1024
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
        session = _session(stream_path)
        problem = _settle_output(session, request.output_path)
        text: str | None = None
        if problem is None:
            text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        limit = opencode_limit(session.error) if process.exit_code != 0 else None
        return agent_run(process, text, problem, session.usage, limit)


def _session(path: Path) -> OpencodeSession:
    session = OpencodeSession()
    try:
        file = open_regular(path)
    except OSError:
        return session
    with file:
        for line in _bounded_lines(file, _EVENT_LINE_LIMIT_BYTES):
            event = opencode_event(line)
            session = session if event is None else session.after(event)
    return session


def _settle_output(session: OpencodeSession, output_path: Path) -> str | None:
    """Leave the run's final JSON at `output_path` and return None, or return why there is none."""
    if session.error is not None:
        output_path.unlink(missing_ok=True)  # a failed session's file is not its output
        return f"opencode reported an error: {excerpt(session.error)}"
    if output_path.exists():
        return None
    found = last_json_object(session.last_text) if session.last_text is not None else None
    if found is None:
        return "opencode's last text holds no JSON object and the agent wrote no output file"
    atomic_write_text(output_path, found + "\n")
    return None
