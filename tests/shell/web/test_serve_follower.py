"""`runner serve`'s follower of `events.jsonl`: a sparse hole an agent made is skipped, not
loaded, and the events after it still reach the pages; a follower that stops says why on the
server's stderr and to every page, those that connect later included."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_core.loop.events import Event, EventOrigin, operator
from runner_shell.git.repo import Repo
from runner_shell.store.event_log import append_events
from runner_shell.store.layout import RunnerPaths
from runner_shell.web.serve import Api, Broker, Client, Watcher
from tests.helpers.e2e import ProjectFactory
from tests.helpers.serve import SseReader, capped_server, completed_one_leaf, events_log

HOLE_BYTES = 300 * 1024 * 1024


def stderr_of(process: subprocess.Popen[str]) -> str:
    process.terminate()
    return process.communicate(timeout=10)[1]


def wait_for(condition: object, what: str, secs: float = 20) -> None:
    deadline = time.monotonic() + secs
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_events_after_a_sparse_hole_reach_the_pages(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_one_leaf(tmp_path, make_project)
    log = events_log(project)
    recorded = log.read_bytes()

    with capped_server(project) as (process, base):
        reader = SseReader(f"{base}/api/events").start()
        assert reader.said_hello.wait(10)
        # The follower reads from where the log ended when the server started: the hole comes
        # after that, as an agent would make it during the run.
        with log.open("r+b") as handle:
            handle.truncate(len(recorded) + HOLE_BYTES)
        with log.open("ab") as handle:
            handle.write(b"\n" + recorded)
        origin = EventOrigin(project.run_id, 2, None, "2026-01-01T00:00:00Z")
        append_events(log, [operator(origin, "tell", "after the hole")])
        wait_for(lambda: reader.events("operator"), "the event after the hole never came")
        stderr = stderr_of(process)

    assert reader.events("operator")[0]["detail"] == "after the hole"
    hello = reader.hello
    assert hello is not None and hello == {"sent": hello["sent"], "events_failure": None}
    assert "live events stopped" not in stderr
    assert "over 4194304 bytes" not in stderr  # a warning of follow's, not a failure here


def test_a_follower_that_stops_says_why_on_stderr_and_to_every_page(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_one_leaf(tmp_path, make_project)
    log = events_log(project)
    log.unlink()
    os.mkfifo(log)

    with capped_server(project) as (process, base):
        reader = SseReader(f"{base}/api/events").start()
        assert reader.said_hello.wait(10)
        stderr = stderr_of(process)

    assert reader.hello is not None
    failure = reader.hello["events_failure"]
    assert (
        failure == f"{log} is a FIFO, not a regular file; the runner does not read it (remove it)"
    )
    stopped = [line for line in stderr.splitlines() if "live events" in line]
    assert stopped == [f"runner: live events stopped: {failure}"]


def test_any_failure_of_the_follower_thread_is_said_never_a_silent_end(
    tmp_path: Path, make_project: ProjectFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    project = completed_one_leaf(tmp_path, make_project)
    paths, repo = RunnerPaths(project.root), Repo(project.root)

    def failing() -> Iterator[Event]:
        raise MemoryError("the line would not fit")
        yield  # a generator, as the follower is

    async def scenario() -> tuple[Broker, list[str]]:
        broker, client = Broker(), Client()
        broker.clients.add(client)
        watcher = Watcher(paths, repo, Api(paths, repo, None), broker)
        await asyncio.to_thread(watcher._forward, failing(), asyncio.get_running_loop())
        await asyncio.sleep(0)  # the failure is published on the server's loop
        return broker, [client.queue.get_nowait() for _ in range(client.queue.qsize())]

    broker, messages = asyncio.run(scenario())

    why = "MemoryError: the line would not fit"
    assert broker.events_failure == why
    assert messages == [f'id: 1\nevent: events_failed\ndata: {{"error": "{why}"}}\n\n']
    assert capsys.readouterr().err == f"runner: live events stopped: {why}\n"
