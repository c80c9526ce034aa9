"""The `codex` backend: `codex exec`, its JSONL event stream kept beside the iteration.

Runs codex with the flags an unattended session needs and reads back the last message it wrote,
the usage and the failure its stream ended on. Never decides what an event or a message means
(runner_core.backends.codex does).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, ClassVar

import attrs

from runner_core.backends.codex import CodexEnding, codex_event, codex_message_limit, usage_after
from runner_core.backends.registry import agent_argv
from runner_core.backends.usage import Usage
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
from runner_shell.store.files import open_regular

# A turn.completed event is a few hundred bytes; longer lines carry command output we never need.
_EVENT_LINE_LIMIT_BYTES = 1024 * 1024

# `codex exec` flags (codex-rs/exec/src/cli.rs): no sandbox, since the agent must edit the repo and
# run its tests; no git check, the runner has done it; JSONL events on stdout; the final message
# constrained by the schema and written to a file; the prompt ("-") read from stdin.
_CODEX_EXEC_ARGS = ("exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", "--json")


@attrs.frozen(slots=True)
class CodexBackend:
    """`codex exec`; usage is summed over the turn.completed events of its JSONL stream."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "codex"

    def argv(self, request: AgentRequest) -> tuple[str, ...]:
        return (
            *agent_argv(self.name, self.command),
            *_CODEX_EXEC_ARGS,
            "--output-schema",
            str(request.schema_path.absolute()),
            "--output-last-message",
            str(request.output_path.absolute()),
            "-",
        )

    def run(self, request: AgentRequest) -> AgentRun:
        process, stream_path = run_keeping_stdout(request, self.argv(request), "stream.jsonl")
        usage, failure = _codex_stream_facts(stream_path)
        text, problem = read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        if problem is not None and failure is not None:
            problem = f"{problem}; codex reported: {excerpt(failure)}"
        limit = None
        if process.exit_code != 0 and failure is not None:
            limit = codex_message_limit(failure, datetime.now(UTC), local_tz())
        return agent_run(process, text, problem, usage, limit)


def _codex_stream_facts(path: Path) -> tuple[Usage, str | None]:
    """Usage summed over turn.completed events, and the failure the stream ended on
    (`CodexEnding`), in one pass over the whole kept stream."""
    usage = Usage()
    ending = CodexEnding()
    try:
        file = open_regular(path)
    except OSError:
        return usage, None
    with file:
        for line in _bounded_lines(file, _EVENT_LINE_LIMIT_BYTES):
            event = codex_event(line)
            if event is None:
                continue  # codex may interleave plain-text notices
            ending = ending.after(event)
            usage = usage_after(usage, event)
    return usage, ending.failure


def _bounded_lines(file: BinaryIO, limit_bytes: int) -> Iterator[bytes]:
    """The file's lines, skipping any longer than `limit_bytes` without holding it in memory."""
    while line := file.readline(limit_bytes + 1):
        if len(line) <= limit_bytes or line.endswith(b"\n"):
            yield line
            continue
        while (rest := file.readline(limit_bytes)) and not rest.endswith(b"\n"):
            pass
