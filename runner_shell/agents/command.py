"""The `command` backend: any program honouring the agent contract (README: RUNNER_OUTPUT_PATH,
optional RUNNER_USAGE_PATH and RUNNER_WAIT_PATH).

Runs the configured argv and reads back the output, usage and wait files it wrote. Never
decides what those files mean (runner_core.backends.command does).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs

from runner_core.backends.command import WaitFileError, usage_file_usage, wait_file_limit
from runner_core.backends.limits import LimitSignal
from runner_core.backends.usage import Usage
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    _run_agent,
    agent_run,
    read_text,
    remove_stale,
)
from runner_shell.sandbox.processes import ProcessResult

_USAGE_LIMIT_BYTES = 64 * 1024


@attrs.frozen(slots=True)
class CommandBackend:
    """Any program honouring the agent contract: RUNNER_OUTPUT_PATH, optional RUNNER_USAGE_PATH."""

    command: tuple[str, ...]
    name: ClassVar[str] = "command"

    def run(self, request: AgentRequest) -> AgentRun:
        remove_stale(request.output_path, request.usage_path)
        if request.wait_path is not None:
            remove_stale(request.wait_path)
        process = _run_agent(request, self.command)
        text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        usage = _usage_from_file(request.usage_path)
        limit, wait_problem = _wait_file_limit(process, request.wait_path)
        return agent_run(process, text, problem, usage, limit, wait_problem)


def _wait_file_limit(
    process: ProcessResult, path: Path | None
) -> tuple[LimitSignal | None, str | None]:
    """The wait a `command` agent asked for (it wrote RUNNER_WAIT_PATH and exited non-zero),
    or why the file it wrote is not a wait: the agent's error, which the core records."""
    if path is None or process.exit_code == 0 or process.timed_out:
        return None, None
    text, _problem = read_text(path, "wait file", _USAGE_LIMIT_BYTES)
    if text is None:
        return None, None
    try:
        return wait_file_limit(text), None
    except WaitFileError as error:
        return None, str(error)


def _usage_from_file(path: Path) -> Usage:
    """The optional usage file; anything malformed counts as not reported, field by field."""
    text, _problem = read_text(path, "usage file", _USAGE_LIMIT_BYTES)
    return Usage() if text is None else usage_file_usage(text)
