"""The `copilot` backend: `copilot --output-format json` (GitHub Copilot CLI), its JSONL session
events kept beside the iteration.

Runs Copilot CLI in its non-interactive mode (the prompt on stdin, no `-p`), every tool, path
and URL allowed (the sandbox is the boundary), no auto-update and no questions back, its usage
written by `--usage-output-file` beside the output file, and leaves the run's final JSON at
RUNNER_OUTPUT_PATH: the file the agent wrote itself, else the last JSON object of its last
answer. Never decides what an event means (runner_core.backends.copilot does).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs

from runner_core.backends.copilot import (
    CopilotSession,
    copilot_event,
    copilot_limit,
    copilot_usage,
)
from runner_core.backends.registry import agent_argv
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    agent_run,
    read_text,
    remove_stale,
    run_keeping_stdout,
)
from runner_shell.agents.event_streams import fold_event_file, settle_output

_USAGE_LIMIT_BYTES = 1024 * 1024
USAGE_FILE = "copilot_usage.json"
# Non-interactive (stdin is the prompt), JSONL events on stdout, every permission granted, no
# download of a newer CLI than the pinned one, no `ask_user` tool a headless run cannot answer.
_COPILOT_ARGS = (
    "--output-format",
    "json",
    "--allow-all",
    "--no-auto-update",
    "--no-ask-user",
)


@attrs.frozen(slots=True)
class CopilotBackend:
    """`copilot --output-format json --allow-all`; tokens from its usage file, no cost."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "copilot"

    def argv(self, usage_path: Path) -> tuple[str, ...]:
        return (
            *agent_argv(self.name, self.command),
            *_COPILOT_ARGS,
            "--usage-output-file",
            str(usage_path.absolute()),
        )

    def run(self, request: AgentRequest) -> AgentRun:
        usage_path = request.output_path.with_name(USAGE_FILE)
        remove_stale(usage_path)
        process, stream_path = run_keeping_stdout(
            request, self.argv(usage_path), "copilot_events.jsonl"
        )
        session = fold_event_file(stream_path, CopilotSession(), _fold)
        error = None if session.error is None else session.error.message
        problem = settle_output(
            "copilot", error, session.last_text, request.output_path, "last answer"
        )
        text: str | None = None
        if problem is None:
            text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        usage_text, _ = read_text(usage_path, "copilot usage file", _USAGE_LIMIT_BYTES)
        limit = copilot_limit(session.error) if process.exit_code != 0 else None
        return agent_run(process, text, problem, copilot_usage(usage_text), limit)


def _fold(session: CopilotSession, line: bytes) -> CopilotSession:
    event = copilot_event(line)
    return session if event is None else session.after(event)
