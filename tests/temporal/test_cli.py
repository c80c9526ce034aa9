"""Specification of `runner worker` and `runner workers` as a user runs them.

`runner workers` prints one line per worker polling the task queue, or a line saying none
does, or `--json` (schemas/views/workers.schema.json). `runner worker` says when it polls and
stops on SIGTERM. Without the Temporal extra, or without a server, each prints one line on
stderr and exits 1, no traceback.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from runner_shell.remote import MISSING_EXTRA
from runner_shell.remote.keys import new_key_file
from tests.helpers import ROOT
from tests.temporal.conftest import TemporalServer, free_port
from tests.temporal.workers import new_queue, shouting_job, worker_thread

CLI_SECS = 30.0
# The CLI's own entry point, with `import temporalio` failing as it does without the extra.
WITHOUT_TEMPORALIO = (
    "import sys; sys.modules['temporalio'] = None; sys.argv = ['runner', *sys.argv[1:]]; "
    "from runner_shell.cli.entry import main; main()"
)


def _runner(*arguments: str, cwd: Path, blocked: bool = False) -> subprocess.CompletedProcess[str]:
    program = ["-c", WITHOUT_TEMPORALIO] if blocked else ["-m", "runner_shell"]
    return subprocess.run(
        [sys.executable, *program, *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=CLI_SECS,
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ("workers",),
        ("worker", "--address", "127.0.0.1:7233", "--task-queue", "q", "--repo-url", "u"),
    ],
)
def test_without_the_extra_each_command_says_how_to_install_it_in_one_line(
    arguments: tuple[str, ...], tmp_path: Path
) -> None:
    result = _runner(*arguments, cwd=tmp_path, blocked=True)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"runner: {MISSING_EXTRA}\n"


def test_workers_lists_each_worker_polling_the_task_queue(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    queue = new_queue()
    flags = ("--address", temporal_server.address, "--task-queue", queue)
    with worker_thread(temporal_server.address, queue, shouting_job, identity="box-2:7"):
        text = _runner("workers", *flags, cwd=tmp_path)
        as_json = _runner("workers", *flags, "--json", cwd=tmp_path)

    assert (text.returncode, text.stderr) == (0, "")
    assert re.fullmatch(r"box-2:7  last seen \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", text.stdout)
    document = json.loads(as_json.stdout)
    schema = json.loads((ROOT / "schemas/views/workers.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert [worker["identity"] for worker in document["workers"]] == ["box-2:7"]
    assert document["task_queue"] == queue


def test_workers_says_when_none_polls(temporal_server: TemporalServer, tmp_path: Path) -> None:
    queue = new_queue()

    result = _runner(
        "workers", "--address", temporal_server.address, "--task-queue", queue, cwd=tmp_path
    )

    assert (
        result.stdout == f"workers: none polling task queue {queue} on {temporal_server.address}\n"
    )


def test_without_a_server_workers_names_its_address_in_one_line(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"

    result = _runner("workers", "--address", address, cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"runner: temporal server at {address} is unavailable: ")
    assert result.stderr.count("\n") == 1


def test_worker_says_it_polls_and_stops_on_sigterm(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    queue = new_queue()
    key_file = tmp_path / "job.key"
    new_key_file(key_file)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runner_shell",
            "worker",
            "--address",
            temporal_server.address,
            "--task-queue",
            queue,
            "--repo-url",
            "file:///nowhere",
            "--identity",
            "box-3",
            "--key-file",
            str(key_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert worker.stdout is not None
        first = worker.stdout.readline()
        worker.send_signal(signal.SIGTERM)
        rest, errors = worker.communicate(timeout=CLI_SECS)
    finally:
        if worker.poll() is None:
            worker.kill()

    assert first == f"worker: polling task queue {queue} on {temporal_server.address} as box-3\n"
    assert (worker.returncode, rest, errors) == (0, "worker: stopped\n", "")


def test_inside_a_runner_repository_workers_asks_its_executor_table(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    from runner_shell.store.layout import RunnerPaths

    queue = new_queue()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=CLI_SECS)
    config = RunnerPaths(tmp_path).config
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[executor]\nkind = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "{queue}"\nremote = "{tmp_path / "shared.git"}"\n'
        f'key_file = "{tmp_path / "job.key"}"\n',
        encoding="utf-8",
    )
    with worker_thread(temporal_server.address, queue, shouting_job, identity="box-4:1"):
        result = _runner("workers", cwd=tmp_path)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("box-4:1  last seen ")


def test_an_unknown_namespace_is_one_line_naming_the_server(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    address = temporal_server.address

    result = _runner("workers", "--address", address, "--namespace", "nowhere", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"runner: temporal server at {address} refused: ")
    assert result.stderr.count("\n") == 1
