"""Run one agent session (a plain command, Codex CLI or Claude Code) and report what it left.

Every backend feeds the prompt file on stdin, runs the agent with `run_process` in the repo root,
makes sure the agent's final JSON ends up at `output_path`, and reads it back with token usage.
It never decides whether the run succeeded, never checks the output against its schema and never
retries: exit code, timeout, output text and usage are facts the caller classifies.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Protocol

import attrs

from runner_core.backends.agent_results import (
    CodexEnding,
    claude_result,
    codex_event,
    last_json_object,
)
from runner_core.loop.usage_limits import (
    LimitSignal,
    WaitFileError,
    claude_result_limit,
    codex_message_limit,
    wait_file_limit,
)
from runner_core.tree.model import AgentRole
from runner_core.views.text import flatten
from runner_shell.scratch.sandbox import Sandbox
from runner_shell.step.processes import ProcessResult, run_process
from runner_shell.store.files import NotRegularFile, atomic_write_text, open_regular

# Above this an output file is reported, not read: a runaway agent must not exhaust our memory.
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
_USAGE_LIMIT_BYTES = 64 * 1024
# A turn.completed event is a few hundred bytes; longer lines carry command output we never need.
_EVENT_LINE_LIMIT_BYTES = 1024 * 1024
_EXCERPT_CHARS = 300

# `codex exec` flags (codex-rs/exec/src/cli.rs): no sandbox, since the agent must edit the repo and
# run its tests; no git check, the runner has done it; JSONL events on stdout; the final message
# constrained by the schema and written to a file; the prompt ("-") read from stdin.
_CODEX_EXEC_ARGS = ("exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", "--json")
# `claude -p` is print (headless) mode with one result object on stdout. Without a permission mode
# every tool call that would need approval is denied, as nobody is there to grant it; acceptEdits
# still denies shell commands (tests, git). bypassPermissions (the canonical spelling of
# --dangerously-skip-permissions) lets the agent edit files and run commands unattended.
_CLAUDE_PRINT_ARGS = ("-p", "--output-format", "json", "--permission-mode", "bypassPermissions")

_CODEX_STREAM_FILE = {
    AgentRole.EXECUTOR: "stream.jsonl",
    AgentRole.DECOMPOSER: "planner_stream.jsonl",
}
_CLAUDE_RESULT_FILE = {
    AgentRole.EXECUTOR: "claude_result.json",
    AgentRole.DECOMPOSER: "planner_claude_result.json",
}


@attrs.frozen(slots=True)
class AgentRequest:
    role: AgentRole
    repo_root: Path  # the agent's working directory
    iter_dir: Path  # .runner/iterations/<run>/<iter>/, exists
    prompt_path: Path  # fed to the agent on stdin
    output_path: Path  # RUNNER_OUTPUT_PATH: where the final JSON must end up
    schema_path: Path  # RUNNER_OUTPUT_SCHEMA
    usage_path: Path  # RUNNER_USAGE_PATH
    log_path: Path  # executor.log or planner_executor.log
    env: Mapping[str, str]  # the child's complete environment, RUNNER_* included
    timeout_secs: float
    limit_bytes: int  # cap of each stream in the log
    on_start: Callable[[int], None] | None = None
    wait_path: Path | None = None  # RUNNER_WAIT_PATH, for a `command` agent
    on_output: Callable[[bytes], None] | None = None  # hears the log as it grows
    sandbox: Sandbox | None = None  # how the session is confined; None: it runs as given
    backend: str = "command"  # whose private HOME files a confined session gets


@attrs.frozen(slots=True)
class AgentRun:
    """What one agent session left behind; None wherever the agent did not say."""

    process: ProcessResult
    output_text: str | None  # the final JSON text read back from output_path
    output_problem: str | None  # why output_text is None
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    cost_usd: float | None
    limit: LimitSignal | None = None  # a usage or rate limit the agent hit


class AgentBackend(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, request: AgentRequest) -> AgentRun: ...


def backend_for(backend: str, command: tuple[str, ...]) -> AgentBackend:
    """The backend named by `[agent] backend`, running `[agent] command` (a prefix for CLIs)."""
    backends: dict[str, Callable[[tuple[str, ...]], AgentBackend]] = {
        CommandBackend.name: CommandBackend,
        CodexBackend.name: CodexBackend,
        ClaudeBackend.name: ClaudeBackend,
    }
    if backend not in backends:
        raise ValueError(
            f"unknown agent backend {backend!r} (one of {', '.join(sorted(backends))})"
        )
    return backends[backend](tuple(command))


@attrs.frozen(slots=True)
class CommandBackend:
    """Any program honouring the agent contract: RUNNER_OUTPUT_PATH, optional RUNNER_USAGE_PATH."""

    command: tuple[str, ...]
    name: ClassVar[str] = "command"

    def run(self, request: AgentRequest) -> AgentRun:
        _remove_stale(request.output_path, request.usage_path)
        if request.wait_path is not None:
            _remove_stale(request.wait_path)
        process = _run_agent(request, self.command)
        text, problem = _read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        run = _agent_run(process, text, problem, _usage_from_file(request.usage_path))
        return attrs.evolve(run, limit=_wait_file_limit(process, request.wait_path))


@attrs.frozen(slots=True)
class CodexBackend:
    """`codex exec`; usage is summed over the turn.completed events of its JSONL stream."""

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "codex"

    def argv(self, request: AgentRequest) -> tuple[str, ...]:
        return (
            *(self.command or ("codex",)),
            *_CODEX_EXEC_ARGS,
            "--output-schema",
            str(request.schema_path.absolute()),
            "--output-last-message",
            str(request.output_path.absolute()),
            "-",
        )

    def run(self, request: AgentRequest) -> AgentRun:
        stream_path = request.iter_dir / _CODEX_STREAM_FILE[request.role]
        _remove_stale(request.output_path, request.usage_path, stream_path)
        process = _run_agent(request, self.argv(request), stdout_copy_path=stream_path)
        usage, failure = _codex_stream_facts(stream_path)
        text, problem = _read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        if problem is not None and failure is not None:
            problem = f"{problem}; codex reported: {_excerpt(failure)}"
        limit = None
        if process.exit_code != 0 and failure is not None:
            limit = codex_message_limit(failure, datetime.now(UTC), _local_tz())
        return attrs.evolve(_agent_run(process, text, problem, usage), limit=limit)


@attrs.frozen(slots=True)
class ClaudeBackend:
    """`claude -p`; its one result object on stdout carries the final text, usage and cost.

    The output is the file the agent wrote itself at RUNNER_OUTPUT_PATH (the prompt asks for it)
    or else the last top-level JSON object of the result text, which the runner writes there.
    """

    command: tuple[str, ...] = ()
    name: ClassVar[str] = "claude"

    def argv(self) -> tuple[str, ...]:
        return (*(self.command or ("claude",)), *_CLAUDE_PRINT_ARGS)

    def run(self, request: AgentRequest) -> AgentRun:
        result_path = request.iter_dir / _CLAUDE_RESULT_FILE[request.role]
        _remove_stale(request.output_path, request.usage_path, result_path)
        process = _run_agent(
            request,
            self.argv(),
            stdout_copy_path=result_path,
            # One byte over the read limit is enough to tell "too large" from "fits".
            stdout_copy_limit_bytes=OUTPUT_LIMIT_BYTES + 1,
        )
        result, result_problem = _claude_result(result_path)
        problem = _settle_claude_output(result, result_problem, request.output_path)
        text: str | None = None
        if problem is None:
            text, problem = _read_text(request.output_path, "output file", OUTPUT_LIMIT_BYTES)
        run = _agent_run(process, text, problem, _claude_usage(result))
        limit = None
        if process.exit_code != 0:
            limit = claude_result_limit(result, datetime.now(UTC), _local_tz())
        return attrs.evolve(run, limit=limit)


# ---------------------------------------------------------------- shared


@attrs.frozen(slots=True)
class _Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None


def _agent_run(
    process: ProcessResult, text: str | None, problem: str | None, usage: _Usage
) -> AgentRun:
    return AgentRun(
        process=process,
        output_text=text,
        output_problem=problem,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cost_usd=usage.cost_usd,
    )


def _remove_stale(*paths: Path) -> None:
    # Whatever is found after the run must have been written by this run.
    for path in paths:
        path.unlink(missing_ok=True)


def _run_agent(
    request: AgentRequest,
    argv: tuple[str, ...],
    *,
    stdout_copy_path: Path | None = None,
    stdout_copy_limit_bytes: int = 64 * 1024 * 1024,
) -> ProcessResult:
    # The agent writes its work tree and the iteration directory; it keeps the network (the model).
    env: Mapping[str, str] = request.env
    confinement = None
    if request.sandbox is not None:
        env = request.sandbox.session_env(request.backend, request.env)
        confinement = request.sandbox.confine(
            argv,
            request.repo_root,
            (request.iter_dir,),
            network=True,
            home_name="agent",
            read_only=(request.schema_path.parent,),
        )
    return run_process(
        argv,
        confinement=confinement,
        cwd=request.repo_root,
        env=env,
        stdin_path=request.prompt_path,
        timeout_secs=request.timeout_secs,
        log_path=request.log_path,
        limit_bytes=request.limit_bytes,
        stdout_copy_path=stdout_copy_path,
        stdout_copy_limit_bytes=stdout_copy_limit_bytes,
        on_start=request.on_start,
        on_output=request.on_output,
    )


def _read_text(path: Path, label: str, limit_bytes: int) -> tuple[str | None, str | None]:
    """`(text, None)`, or `(None, why not)`; the size is checked before anything is read.

    Opened as every file the agent can reach: a symlink is not followed and a FIFO, even one
    swapped in after a check, never blocks (`open_regular`)."""
    try:
        with open_regular(path) as file:
            size = os.fstat(file.fileno()).st_size
            if size > limit_bytes:
                return None, f"{label} {path} is too large ({size} bytes, limit {limit_bytes})"
            data = file.read(limit_bytes + 1)
    except FileNotFoundError:
        return None, f"{label} {path} does not exist"
    except NotRegularFile:
        return None, f"{label} {path} is not a regular file"
    except OSError as error:
        return None, f"{label} {path} cannot be read: {error.strerror or error}"
    if len(data) > limit_bytes:  # it grew after the size check
        return None, f"{label} {path} is too large (over {limit_bytes} bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"{label} {path} is not UTF-8 (invalid byte at offset {error.start})"
    if not text.strip():
        return None, f"{label} {path} is empty"
    return text, None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _token_count(value: object) -> int | None:
    # bool is an int in Python, and a count can be neither true nor negative.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _excerpt(text: str) -> str:
    return flatten(text, _EXCERPT_CHARS + 3, "...")


# ---------------------------------------------------------------- command


def _local_tz() -> tzinfo:
    # The CLIs print reset times in the local time zone.
    return datetime.now().astimezone().tzinfo or UTC


def _wait_file_limit(process: ProcessResult, path: Path | None) -> LimitSignal | None:
    """The wait a `command` agent asked for: it wrote RUNNER_WAIT_PATH and exited non-zero.
    A malformed file is no wait; the process failure stands as a runner error."""
    if path is None or process.exit_code == 0 or process.timed_out:
        return None
    text, _problem = _read_text(path, "wait file", _USAGE_LIMIT_BYTES)
    if text is None:
        return None
    try:
        return wait_file_limit(text)
    except WaitFileError:
        return None


def _usage_from_file(path: Path) -> _Usage:
    """The optional usage file; anything malformed counts as not reported, field by field."""
    text, _problem = _read_text(path, "usage file", _USAGE_LIMIT_BYTES)
    usage = _json_object(text) if text is not None else None
    if usage is None:
        return _Usage()
    return _Usage(
        input_tokens=_token_count(usage.get("input_tokens")),
        output_tokens=_token_count(usage.get("output_tokens")),
        cached_input_tokens=_token_count(usage.get("cached_input_tokens")),
        cost_usd=_cost(usage.get("cost_usd")),
    )


# ---------------------------------------------------------------- codex

_CODEX_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")


def _codex_stream_facts(path: Path) -> tuple[_Usage, str | None]:
    """Usage summed over turn.completed events, and the failure the stream ended on
    (`CodexEnding`), in one pass over the whole kept stream."""
    totals: dict[str, int | None] = dict.fromkeys(_CODEX_USAGE_KEYS)
    ending = CodexEnding()
    try:
        file = open_regular(path)
    except OSError:
        return _Usage(), None
    with file:
        for line in _bounded_lines(file, _EVENT_LINE_LIMIT_BYTES):
            event = codex_event(line)
            if event is None:
                continue  # codex may interleave plain-text notices
            ending = ending.after(event)
            if event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict):
                for key in _CODEX_USAGE_KEYS:
                    count = _token_count(event["usage"].get(key))
                    if count is not None:
                        totals[key] = (totals[key] or 0) + count
    return _Usage(**totals), ending.failure


def _bounded_lines(file: BinaryIO, limit_bytes: int) -> Iterator[bytes]:
    """The file's lines, skipping any longer than `limit_bytes` without holding it in memory."""
    while line := file.readline(limit_bytes + 1):
        if len(line) <= limit_bytes or line.endswith(b"\n"):
            yield line
            continue
        while (rest := file.readline(limit_bytes)) and not rest.endswith(b"\n"):
            pass


# ---------------------------------------------------------------- claude


def _claude_result(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Claude's result object from its kept stdout, or why there is none."""
    text, problem = _read_text(path, "claude result", OUTPUT_LIMIT_BYTES)
    if text is None:
        return None, f"claude printed no result: {problem}"
    result = claude_result(text)
    if result is None:
        return None, f"claude printed no result object on stdout (see {path})"
    return result, None


def _settle_claude_output(
    result: dict[str, Any] | None, result_problem: str | None, output_path: Path
) -> str | None:
    """Leave the run's final JSON at `output_path` and return None, or return why there is none."""
    if result is not None and _claude_reported_error(result):
        # A file the failed session left behind must not pass for its output.
        output_path.unlink(missing_ok=True)
        message = f"claude reported an error (subtype {result.get('subtype')!r})"
        detail = result.get("result")
        return f"{message}: {_excerpt(detail)}" if isinstance(detail, str) else message
    if output_path.exists():
        return None  # written by the agent itself, as its prompt asks
    if result is None:
        return result_problem
    text = result.get("result")
    found = last_json_object(text) if isinstance(text, str) else None
    if found is None:
        return "claude's result text holds no JSON object and the agent wrote no output file"
    atomic_write_text(output_path, found + "\n")
    return None


def _claude_reported_error(result: Mapping[str, Any]) -> bool:
    subtype = result.get("subtype")
    return result.get("is_error") is True or (
        isinstance(subtype, str) and subtype.startswith("error")
    )


def _claude_usage(result: Mapping[str, Any] | None) -> _Usage:
    if result is None:
        return _Usage()
    usage = result.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return _Usage(
        input_tokens=_token_count(usage.get("input_tokens")),
        output_tokens=_token_count(usage.get("output_tokens")),
        cached_input_tokens=_token_count(usage.get("cache_read_input_tokens")),
        cost_usd=_cost(result.get("total_cost_usd")),
    )


def _cost(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
