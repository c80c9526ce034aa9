"""Specification of a lost worker: a worker killed mid-job stops heartbeating, and after the
request's `heartbeat_secs` Temporal hands the job to another worker, which finishes it.

The job keeps silent while it waits: only the worker's own heartbeats keep it alive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT
from tests.temporal.conftest import TemporalServer
from tests.temporal.workers import executor, new_queue

WORKER = Path(__file__).with_name("marker_worker.py")
WAIT_SECS = 20.0


def _start_worker(
    server: TemporalServer, queue: str, identity: str, marks: Path
) -> subprocess.Popen[str]:
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), server.address, queue, identity, str(marks)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline() == "polling\n"
    return worker


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.1)


def _kill(worker: subprocess.Popen[str]) -> None:
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)


def test_a_job_of_a_killed_worker_finishes_on_another(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    queue = new_queue()
    first = _start_worker(temporal_server, queue, "first", tmp_path)
    second = None
    try:
        with executor(temporal_server.address, queue) as coordinator:
            coordinator.submit("job-lost-worker", json.dumps({"heartbeat_secs": 2}))
            _wait_for(tmp_path / "first.started")
            time.sleep(3)  # longer than heartbeat_secs: the worker's own heartbeats kept it
            assert not (tmp_path / "second.started").exists()
            _kill(first)
            (tmp_path / "release").touch()
            second = _start_worker(temporal_server, queue, "second", tmp_path)

            result = coordinator.result("job-lost-worker", WAIT_SECS)
    finally:
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                _kill(worker)

    assert result == "done by second"
    assert json.loads((tmp_path / "second.started").read_text()) == {"heartbeat_secs": 2}
