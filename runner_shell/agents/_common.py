"""What every agent session is given and leaves, and how each backend starts its agent.

Every backend feeds the prompt file on stdin, runs the agent with `run_process` in the repo root,
makes sure the agent's final JSON ends up at `output_path`, and reads it back with token usage.
It never decides whether the run succeeded, never checks the output against its schema and never
retries: exit code, timeout, output text and usage are facts the caller classifies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Protocol

import attrs

from runner_core.backends.egress import NETWORK_LOG, egress_rules
from runner_core.backends.limits import LimitSignal
from runner_core.backends.usage import Usage
from runner_core.tree.model import AgentRole
from runner_core.views.text import flatten
from runner_shell.sandbox.bwrap import Confinement
from runner_shell.sandbox.processes import ProcessResult, run_process
from runner_shell.sandbox.proxy import bridged_argv, egress_proxy
from runner_shell.scratch.sandbox import Sandbox
from runner_shell.store.files import NotRegularFile, open_regular

# Above this an output file is reported, not read: a runaway agent must not exhaust our memory.
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
_EXCERPT_CHARS = 300


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
    allow_hosts: tuple[str, ...] = ()  # `[sandbox] allow_hosts`: reachable besides the backend's
    # The agent's own directory (output, usage and wait files), the one it may write beside
    # its checkout: never the iteration directory, whose files are the runner's.
    output_dir: Path | None = None


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
    wait_problem: str | None = None  # why the wait file the agent wrote is not one


class AgentBackend(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, request: AgentRequest) -> AgentRun: ...


def agent_run(
    process: ProcessResult,
    text: str | None,
    problem: str | None,
    usage: Usage,
    limit: LimitSignal | None = None,
    wait_problem: str | None = None,
) -> AgentRun:
    """The session's facts, its usage spread into the run's fields."""
    return AgentRun(
        process=process,
        output_text=text,
        output_problem=problem,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cost_usd=usage.cost_usd,
        limit=limit,
        wait_problem=wait_problem,
    )


def kept_stdout_path(request: AgentRequest, name: str) -> Path:
    """Where a backend keeps the session's raw stdout: `name` in the iteration directory, or
    `planner_<name>` for a decomposer, as its log is `planner_executor.log`."""
    prefix = "planner_" if request.role is AgentRole.DECOMPOSER else ""
    return request.iter_dir / f"{prefix}{name}"


def remove_stale(*paths: Path) -> None:
    """Delete what an earlier session left at `paths`."""
    # Whatever is found after the run must have been written by this run.
    for path in paths:
        path.unlink(missing_ok=True)


def run_keeping_stdout(
    request: AgentRequest, argv: tuple[str, ...], name: str, limit_bytes: int | None = None
) -> tuple[ProcessResult, Path]:
    """Start a CLI whose machine-readable answer is its stdout, kept as `name` (kept_stdout_path)
    and at most `limit_bytes` of it; what an earlier session left there, or at the output and
    usage paths, is gone first, so whatever is found after the run is this run's."""
    kept = kept_stdout_path(request, name)
    remove_stale(request.output_path, request.usage_path, kept)
    if limit_bytes is None:
        return _run_agent(request, argv, stdout_copy_path=kept), kept
    return _run_agent(
        request, argv, stdout_copy_path=kept, stdout_copy_limit_bytes=limit_bytes
    ), kept


def _run_agent(
    request: AgentRequest,
    argv: tuple[str, ...],
    *,
    stdout_copy_path: Path | None = None,
    stdout_copy_limit_bytes: int = 64 * 1024 * 1024,
) -> ProcessResult:
    # The agent writes its work tree and the iteration directory; it reaches its model (and what
    # else the allow-list names) only through the session's egress proxy.
    env: Mapping[str, str] = request.env
    confinement = None
    if request.sandbox is not None:
        env = request.sandbox.session_env(request.backend, request.env)
        confinement = request.sandbox.confine(
            argv,
            request.repo_root,
            request.output_dir or request.iter_dir,
            network=False,
            home_name="agent",
            read_only=(request.schema_path.parent,),
        )
    if confinement is None:
        return _start_agent(request, argv, env, None, stdout_copy_path, stdout_copy_limit_bytes)
    rules = egress_rules(request.backend, request.allow_hosts)
    log_path = request.iter_dir / NETWORK_LOG
    with egress_proxy(rules, log_path, request.timeout_secs) as proxy:
        proxied = attrs.evolve(confinement, proxy_socket=proxy.socket_path)
        bridged = bridged_argv(argv)
        return _start_agent(
            request, bridged, env, proxied, stdout_copy_path, stdout_copy_limit_bytes
        )


def _start_agent(
    request: AgentRequest,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    confinement: Confinement | None,
    stdout_copy_path: Path | None,
    stdout_copy_limit_bytes: int,
) -> ProcessResult:
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


def read_text(path: Path, label: str, limit_bytes: int) -> tuple[str | None, str | None]:
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


def excerpt(text: str) -> str:
    """`text` on one line, cut to a length a problem message can quote."""
    return flatten(text, _EXCERPT_CHARS + 3, "...")


def local_tz() -> tzinfo:
    """The zone the CLIs print reset times in: the local one."""
    return datetime.now().astimezone().tzinfo or UTC
