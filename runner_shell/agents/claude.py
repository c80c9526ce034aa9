"""The `claude` backend: `claude -p`, its one result object on stdout kept beside the iteration.

Runs Claude Code headless with the permissions an unattended session needs, and leaves the
run's final JSON at RUNNER_OUTPUT_PATH: the file the agent wrote itself, else the last JSON
object of its result text. Never decides what the result object means
(runner_core.backends.claude does).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import attrs

from runner_core.backends.claude import (
    claude_reported_error,
    claude_result,
    claude_result_limit,
    claude_usage,
    last_json_object,
)
from runner_core.backends.registry import agent_argv
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    agent_run,
    excerpt,
    local_tz,
    read_text,
    run_keeping_stdout,
)
from runner_shell.store.files import atomic_write_text

# `claude -p` is print (headless) mode with one result object on stdout. Without a permission mode
# every tool call that would need approval is denied, as nobody is there to grant it; acceptEdits
# still denies shell commands (tests, git). bypassPermissions (the canonical spelling of
# --dangerously-skip-permissions) lets the agent edit files and run commands unattended.
_CLAUDE_PRINT_ARGS = ("-p", "--output-format", "json", "--permission-mode", "bypassPermissions")


@attrs.frozen(slots=True)
class ClaudeBackend:
    """`claude -p`; its one result object on stdout carries the final text, usage and cost.

    The output is the file the agent wrote itself at RUNNER_OUTPUT_PATH (the prompt asks for it)
    or else the last top-level JSON object of the result text, which the runner writes there.
    """

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "claude"

    def argv(self) -> tuple[str, ...]:
        return (*agent_argv(self.name, self.command), *_CLAUDE_PRINT_ARGS)

    def run(self, request: AgentRequest) -> AgentRun:
        # One byte over the read limit is enough to tell "too large" from "fits".
        process, result_path = run_keeping_stdout(
            request, self.argv(), "claude_result.json", OUTPUT_LIMIT_BYTES + 1
        )
        result, result_problem = _claude_result(result_path)
        problem = settle_result_output("claude", result, result_problem, request.output_path)
        text: str | None = None
        if problem is None:
            text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        limit = None
        if process.exit_code != 0:
            limit = claude_result_limit(result, datetime.now(UTC), local_tz())
        return agent_run(process, text, problem, claude_usage(result), limit)


def _claude_result(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Claude's result object from its kept stdout, or why there is none."""
    text, problem = read_text(path, "claude result", OUTPUT_LIMIT_BYTES)
    if text is None:
        return None, f"claude printed no result: {problem}"
    result = claude_result(text)
    if result is None:
        return None, f"claude printed no result object on stdout (see {path})"
    return result, None


def settle_result_output(
    name: str, result: Mapping[str, Any] | None, result_problem: str | None, output_path: Path
) -> str | None:
    """Leave the run's final JSON at `output_path` and return None, or return why there is none:
    a Claude-shaped result object (`is_error`, `subtype`, the final text in `result`) of the CLI
    called `name`."""
    if result is not None and claude_reported_error(result):
        # A file the failed session left behind must not pass for its output.
        output_path.unlink(missing_ok=True)
        message = f"{name} reported an error (subtype {result.get('subtype')!r})"
        detail = result.get("result")
        return f"{message}: {excerpt(detail)}" if isinstance(detail, str) else message
    if output_path.exists():
        return None  # written by the agent itself, as its prompt asks
    if result is None:
        return result_problem
    text = result.get("result")
    found = last_json_object(text) if isinstance(text, str) else None
    if found is None:
        return f"{name}'s result text holds no JSON object and the agent wrote no output file"
    atomic_write_text(output_path, found + "\n")
    return None
