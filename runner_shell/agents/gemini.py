"""The `gemini` backend: `gemini -p` (Gemini CLI), its one result object kept beside the
iteration.

Runs the CLI headless with every tool call approved (`--approval-mode yolo`), the prompt on
stdin, and leaves the run's final JSON at RUNNER_OUTPUT_PATH: the file the agent wrote itself,
else the last JSON object of its `response`. On a failure the CLI prints its result object
(with `error`) on stderr instead, so that is read from the log. Never decides what the object
means (runner_core.backends.gemini does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import attrs

from runner_core.backends.claude import last_json_object
from runner_core.backends.gemini import gemini_error, gemini_limit, gemini_result, gemini_usage
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
from runner_shell.store.files import atomic_write_text

# Headless (`-p ""`: the prompt is stdin, which the CLI appends), one JSON object on stdout, every
# tool call approved. `--skip-trust`: Gemini CLI otherwise drops yolo to "default" in a folder
# the operator never trusted interactively, and the runner's scratch clone is always new.
_GEMINI_ARGS = ("-p", "", "--output-format", "json", "--approval-mode", "yolo", "--skip-trust")
_STDERR_HEADING = "=== stderr ===\n"


def _stderr_of(log_path: Path) -> str:
    """What the log kept of the session's stderr ("" when nothing)."""
    text, _problem = read_text(log_path, "log", OUTPUT_LIMIT_BYTES)
    if text is None or _STDERR_HEADING not in text:
        return ""
    return text.split(_STDERR_HEADING, 1)[1]


def _run_gemini(request: AgentRequest, argv: tuple[str, ...], name: str) -> AgentRun:
    process, result_path = run_keeping_stdout(
        request, argv, f"{name}_result.json", OUTPUT_LIMIT_BYTES + 1
    )
    stdout, _problem = read_text(result_path, f"{name} result", OUTPUT_LIMIT_BYTES)
    result = gemini_result(stdout) if stdout is not None else None
    if result is None or (process.exit_code != 0 and gemini_error(result) is None):
        result = gemini_result(_stderr_of(request.log_path)) or result
    problem = _settle_output(result, request.output_path, name, result_path)
    text: str | None = None
    if problem is None:
        text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
    limit = gemini_limit(result) if process.exit_code != 0 else None
    return agent_run(process, text, problem, gemini_usage(result), limit)


def _settle_output(
    result: dict[str, Any] | None, output_path: Path, name: str, result_path: Path
) -> str | None:
    """Leave the run's final JSON at `output_path` and return None, or return why there is none."""
    error = gemini_error(result)
    if error is not None:
        output_path.unlink(missing_ok=True)  # a failed session's file is not its output
        message, code = error
        return f"{name} reported an error (code {code}): {excerpt(message)}"
    if output_path.exists():
        return None
    if result is None:
        return f"{name} printed no result object (see {result_path} and the log)"
    response = result.get("response")
    found = last_json_object(response) if isinstance(response, str) else None
    if found is None:
        return f"{name}'s response holds no JSON object and the agent wrote no output file"
    atomic_write_text(output_path, found + "\n")
    return None


@attrs.frozen(slots=True)
class GeminiBackend:
    """`gemini -p --output-format json`; usage from its `stats.models`, no cost."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "gemini"

    def argv(self) -> tuple[str, ...]:
        return (*agent_argv(self.name, self.command), *_GEMINI_ARGS)

    def run(self, request: AgentRequest) -> AgentRun:
        return _run_gemini(request, self.argv(), self.name)
