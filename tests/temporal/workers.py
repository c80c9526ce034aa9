"""Workers for the tests: `serve_jobs` in a thread of the test process, stopped on exit."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from runner_shell.remote.keys import JobKey, key_of
from runner_shell.remote.temporal import Job, TemporalExecutor, serve_jobs

Heartbeat = Callable[[str], None]
START_SECS = 20.0
STOP_SECS = 30.0
# The key the tests' loops and workers seal jobs with (a test of another key makes its own).
TEST_KEY = key_of(bytes(range(32)))


def new_queue() -> str:
    """A task queue no other test polls."""
    return f"test-{uuid.uuid4().hex[:12]}"


@contextmanager
def worker_thread(
    address: str,
    task_queue: str,
    job: Job,
    identity: str = "test-worker",
    slots: int = 2,
    key: JobKey = TEST_KEY,
) -> Iterator[None]:
    """A worker taking jobs from `task_queue` until the block ends."""
    stop = threading.Event()
    polling = threading.Event()
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            serve_jobs(
                address,
                "default",
                task_queue,
                identity,
                slots,
                job,
                stop,
                key=key,
                on_polling=polling.set,
            )
        except BaseException as error:
            failures.append(error)
            polling.set()

    thread = threading.Thread(target=serve, name=f"worker-{identity}", daemon=True)
    thread.start()
    assert polling.wait(START_SECS), "the worker did not start polling"
    assert failures == []
    _until_listed(address, task_queue, identity)
    try:
        yield
    finally:
        stop.set()
        thread.join(STOP_SECS)
        assert not thread.is_alive(), "the worker did not stop"
        assert failures == []


def _until_listed(address: str, task_queue: str, identity: str) -> None:
    """Until the server lists the worker among the queue's pollers: it starts polling a moment
    after it says it does."""
    give_up = time.monotonic() + START_SECS
    with executor(address, task_queue) as coordinator:
        while identity not in {seen.identity for seen in coordinator.workers()}:
            assert time.monotonic() < give_up, f"{identity} not polling after {START_SECS} s"
            time.sleep(0.05)


@contextmanager
def executor(
    address: str, task_queue: str, key: JobKey | None = TEST_KEY
) -> Iterator[TemporalExecutor]:
    coordinator = TemporalExecutor.connect(address, "default", task_queue, 10, key)
    try:
        yield coordinator
    finally:
        coordinator.close()


def shouting_job(request_json: str, heartbeat: Heartbeat) -> str:
    """A job answering its request's text as it came and in capitals."""
    request = json.loads(request_json)
    heartbeat("shouting")
    return json.dumps({"echo": request["text"], "shout": request["text"].upper()})
