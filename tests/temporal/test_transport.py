"""Specification of the Temporal transport against a real development server.

A submitted request reaches a worker's job and its result comes back; a job id runs once,
however often it is submitted; a refused job is not tried again and fails with its line; the
server lists the workers polling a task queue; an unreachable server is named in time, and a
submission the server does not answer is given up within a look's deadline (the loop says the
server is away while it is), then sent again runs its job once.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from runner_shell.remote.errors import JobFailed, JobRefused, TemporalUnavailable
from runner_shell.remote.job_files import job_timing
from runner_shell.remote.temporal import LOOK_SECS, LOOP_GRACE_SECS, TemporalExecutor, WorkerSeen
from tests.temporal.conftest import TemporalServer, free_port
from tests.temporal.relay import relay_to
from tests.temporal.workers import Heartbeat, executor, new_queue, shouting_job, worker_thread

RESULT_SECS = 30.0


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


class CountingJob:
    """A job counting its calls, each waiting until `release` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(self, request_json: str, heartbeat: Heartbeat) -> str:
        self.calls += 1
        self.started.set()
        assert self.release.wait(RESULT_SECS)
        return f"done {self.calls}"


def test_a_job_id_submitted_again_after_its_result_runs_once(
    temporal_server: TemporalServer,
) -> None:
    queue, job = new_queue(), CountingJob()
    with (
        worker_thread(temporal_server.address, queue, job),
        executor(temporal_server.address, queue) as coordinator,
    ):
        coordinator.submit("job-once", "{}")
        first = coordinator.result("job-once", RESULT_SECS)
        coordinator.submit("job-once", "{}")
        second = coordinator.result("job-once", RESULT_SECS)

    assert (first, second, job.calls) == ("done 1", "done 1", 1)


def test_submitting_a_running_job_id_again_attaches_to_it(temporal_server: TemporalServer) -> None:
    queue, job = new_queue(), CountingJob()
    job.release.clear()
    with (
        worker_thread(temporal_server.address, queue, job),
        executor(temporal_server.address, queue) as coordinator,
        executor(temporal_server.address, queue) as restarted,
    ):
        coordinator.submit("job-attach", "{}")
        assert job.started.wait(RESULT_SECS)
        restarted.submit("job-attach", "{}")
        job.release.set()

        results = {restarted.result("job-attach", RESULT_SECS)}
        results.add(coordinator.result("job-attach", RESULT_SECS))

    assert (results, job.calls) == ({"done 1"}, 1)


def refusing_job(request_json: str, heartbeat: Heartbeat) -> str:
    refusing_job.calls += 1  # type: ignore[attr-defined]
    raise JobRefused("request names no leaf")


def test_a_refused_job_is_not_tried_again_and_fails_with_its_line(
    temporal_server: TemporalServer,
) -> None:
    refusing_job.calls = 0  # type: ignore[attr-defined]
    queue = new_queue()
    with (
        worker_thread(temporal_server.address, queue, refusing_job),
        executor(temporal_server.address, queue) as coordinator,
    ):
        coordinator.submit("job-refused", "{}")
        with pytest.raises(JobFailed) as failed:
            coordinator.result("job-refused", RESULT_SECS)
        time.sleep(1.5)  # past the first retry's interval, were there one

    assert str(failed.value) == "job job-refused failed: request names no leaf"
    assert refusing_job.calls == 1  # type: ignore[attr-defined]


def test_the_workers_polling_a_task_queue_are_listed(temporal_server: TemporalServer) -> None:
    queue = new_queue()
    with (
        worker_thread(temporal_server.address, queue, shouting_job, identity="box-1:42"),
        executor(temporal_server.address, queue) as coordinator,
    ):
        seen = _wait_for_workers(coordinator)

    assert [worker.identity for worker in seen] == ["box-1:42"]
    assert seen[0].last_access.tzinfo is not None


def _wait_for_workers(coordinator: TemporalExecutor) -> tuple[WorkerSeen, ...]:
    deadline = time.monotonic() + 10
    while not (seen := coordinator.workers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return seen


def test_an_unreachable_server_is_named_within_the_deadline() -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()

    with pytest.raises(TemporalUnavailable) as unavailable:
        TemporalExecutor.connect(address, "default", "runner", 5)

    assert time.monotonic() - started < 5 + 5
    assert str(unavailable.value).startswith(f"temporal server at {address} is unavailable: ")
    assert "\n" not in str(unavailable.value)


@pytest.mark.parametrize(
    ("request_json", "timing"),
    [
        ("{}", (3600.0, 30.0)),
        ('{"deadline_secs": 60, "heartbeat_secs": 2}', (60.0, 2.0)),
        ('{"deadline_secs": 0, "heartbeat_secs": -1}', (3600.0, 30.0)),
        ('{"deadline_secs": true, "heartbeat_secs": "5"}', (3600.0, 30.0)),
        ("[1, 2]", (3600.0, 30.0)),
        ("not json", (3600.0, 30.0)),
    ],
)
def test_a_request_sets_its_deadline_and_heartbeat_else_the_defaults_hold(
    request_json: str, timing: tuple[float, float]
) -> None:
    assert job_timing(request_json) == timing


def test_a_submission_the_server_does_not_answer_is_given_up_within_a_look(
    temporal_server: TemporalServer,
) -> None:
    """The SDK retries a call on a silent link for as long as its deadline (10 s here): a
    submission waits at most LOOK_SECS, so the loop's wait says the server is away while it
    is; sent again once the link is back, the job runs once."""
    queue = new_queue()
    request = json.dumps({"text": "silence", "heartbeat_secs": 5})
    with relay_to(temporal_server.address) as relay, executor(relay.address, queue) as coordinator:
        relay.stall()
        started = time.monotonic()
        with pytest.raises(TemporalUnavailable):
            coordinator.submit("job-in-silence", request)
        took = time.monotonic() - started
        relay.resume()
        with worker_thread(temporal_server.address, queue, shouting_job):
            coordinator.submit("job-in-silence", request)
            result = coordinator.result("job-in-silence", RESULT_SECS)

    assert took < LOOK_SECS + LOOP_GRACE_SECS, took
    assert json.loads(result) == {"echo": "silence", "shout": "SILENCE"}
