"""The `qwen` backend: `qwen -p` (Qwen Code), its JSON array of session messages kept beside the
iteration.

Runs Qwen Code headless with every tool call approved, the prompt on stdin, and leaves the run's
final JSON at RUNNER_OUTPUT_PATH: the file the agent wrote itself, else the last JSON object of
its result text. Never decides what the messages mean (runner_core.backends.qwen does).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from runner_core.backends.qwen import qwen_limit, qwen_result, qwen_usage
from runner_core.backends.registry import agent_argv
from runner_shell.agents._common import (
    OUTPUT_LIMIT_BYTES,
    AgentRequest,
    AgentRun,
    agent_run,
    read_text,
    run_keeping_stdout,
)
from runner_shell.agents.claude import settle_result_output

# Headless (`-p ""`: the prompt is stdin, which the CLI appends), the session's messages as one
# JSON array on stdout, every tool call approved (Qwen Code has no folder trust headless).
_QWEN_ARGS = ("-p", "", "--output-format", "json", "--approval-mode", "yolo")


@attrs.frozen(slots=True)
class QwenBackend:
    """`qwen -p --output-format json`; tokens from its result's `stats.models`, no cost."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "qwen"

    def argv(self) -> tuple[str, ...]:
        return (*agent_argv(self.name, self.command), *_QWEN_ARGS)

    def run(self, request: AgentRequest) -> AgentRun:
        process, result_path = run_keeping_stdout(
            request, self.argv(), "qwen_result.json", OUTPUT_LIMIT_BYTES + 1
        )
        stdout, problem = read_text(result_path, "qwen result", OUTPUT_LIMIT_BYTES)
        result = qwen_result(stdout) if stdout is not None else None
        if stdout is None:
            problem = f"qwen printed no result: {problem}"
        elif result is None:
            problem = f"qwen printed no result message on stdout (see {result_path})"
        problem = settle_result_output("qwen", result, problem, request.output_path)
        text: str | None = None
        if problem is None:
            text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        limit = qwen_limit(result) if process.exit_code != 0 else None
        return agent_run(process, text, problem, qwen_usage(result), limit)
