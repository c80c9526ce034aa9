"""Specification of the Temporal transport against a real development server.

A submitted request reaches a worker's job and its result comes back; a job id runs once,
however often it is submitted; a refused job is not tried again and fails with its line; the
server lists the workers polling a task queue; an unreachable server is named in time.
"""

from __future__ import annotations

import json

from tests.temporal.conftest import TemporalServer
from tests.temporal.workers import Heartbeat, executor, new_queue, worker_thread

RESULT_SECS = 30.0


def shouting_job(request_json: str, heartbeat: Heartbeat) -> str:
    request = json.loads(request_json)
    heartbeat("shouting")
    return json.dumps({"echo": request["text"], "shout": request["text"].upper()})


def test_a_request_reaches_the_worker_and_its_result_comes_back(
    temporal_server: TemporalServer,
) -> None:
    queue = new_queue()
    with (
        worker_thread(temporal_server.address, queue, shouting_job),
        executor(temporal_server.address, queue) as coordinator,
    ):
        coordinator.submit("job-round-trip", json.dumps({"text": "hello", "heartbeat_secs": 5}))

        result = coordinator.result("job-round-trip", RESULT_SECS)

    assert json.loads(result) == {"echo": "hello", "shout": "HELLO"}
