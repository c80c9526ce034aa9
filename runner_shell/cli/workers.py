"""`runner worker` and `runner workers`: a machine taking leaf jobs from a Temporal task queue,
and the list of machines doing so (docs/temporal.md).

Registered on base.py's typer app when app.py imports this module. Neither imports temporalio
before `require_temporal()` has said the extra is installed, so `runner` starts without it.
"""

from __future__ import annotations

import importlib
import json
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, cast

import typer

from runner_core.run.executor_config import LOCAL_EXECUTOR, ExecutorConfig, address_problem
from runner_shell.cli.base import AsJson, app, guarded
from runner_shell.errors import UserFacingError
from runner_shell.remote import require_temporal

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
RunJob = Callable[[Path, str, str, Callable[[str], None]], str]


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


def _job(work_dir: Path, repo_url: str) -> Callable[[str, Callable[[str], None]], str]:
    def run(request_json: str, heartbeat: Callable[[str], None]) -> str:
        # By name and only once a job comes: the job's module is its own concern, not the CLI's.
        module = importlib.import_module("runner_shell.remote.worker_job")
        run_job = cast(RunJob, module.run_job)
        return run_job(work_dir, repo_url, request_json, heartbeat)

    return run


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
    slots: Annotated[
        int,
        typer.Option("--slots", min=1, max=MAX_WORKER_SLOTS, metavar="N", help="Jobs run at once."),
    ] = 1,
    identity: Annotated[
        str | None,
        typer.Option("--identity", metavar="ID", help="This worker's name (default HOST:PID)."),
    ] = None,
) -> None:
    """Take leaf jobs from a Temporal task queue and run them here, until SIGINT or SIGTERM."""
    require_temporal()
    from runner_shell.remote.temporal import default_identity, serve_jobs

    _checked_address(address)
    name = identity or default_identity()
    job = _job(Path(directory).expanduser(), repo_url)
    with _stopped_by_signals() as stop:
        serve_jobs(
            address,
            namespace,
            task_queue,
            name,
            slots,
            job,
            stop,
            on_polling=lambda: typer.echo(
                f"worker: polling task queue {task_queue} on {address} as {name}"
            ),
        )
    typer.echo("worker: stopped")


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
) -> None:
    """List the workers polling the task queue (defaults: this repository's [executor])."""
    require_temporal()
    from runner_core.views.workers import worker_lines, workers_document
    from runner_shell.remote.temporal import TemporalExecutor

    configured = _configured_executor()
    address = _checked_address(address or configured.address)
    namespace = namespace or configured.namespace
    task_queue = task_queue or configured.task_queue
    with TemporalExecutor.connect(address, namespace, task_queue, WORKERS_TIMEOUT_SECS) as client:
        rows = [(seen.identity, seen.last_access) for seen in client.workers()]
    if as_json:
        document = workers_document(address, namespace, task_queue, rows)
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        typer.echo("\n".join(worker_lines(address, task_queue, rows)))
