"""Load: 20 SSE clients follow a real 50-iteration loop through a real `runner serve`.

Every client receives every event the loop writes to events.jsonl, in order, and no message in
between is dropped; the loop's median time per iteration (from one iteration's start to the
next's, in meta.json) changes by less than 10% against the same loop with no server and no
clients. Bounded for CI: about a minute in all.
"""

from __future__ import annotations

import datetime
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.e2e import Project, ProjectFactory
from tests.helpers.serve import SseReader, free_port, leaves_tree, script_leaves, serving

CLIENTS = 20
ITERATIONS = 50
AGENT_SLEEP_SECS = 0.2
MAX_SLOWDOWN = 0.10

pytestmark = pytest.mark.load


def loop_project(base: Path, make_project: ProjectFactory) -> Project:
    base.mkdir()
    project = make_project(base, "started")
    project.prepare(leaves_tree(ITERATIONS), max_iterations=ITERATIONS + 5)
    script_leaves(project, ITERATIONS, sleep=AGENT_SLEEP_SECS)
    return project


def median_iteration_secs(project: Project) -> float:
    starts = [
        datetime.datetime.fromisoformat(project.meta(n)["started_at"])
        for n in range(1, ITERATIONS + 1)
    ]
    return statistics.median((b - a).total_seconds() for a, b in itertools.pairwise(starts))


def event_lines(project: Project) -> list[str]:
    path = project.runner_dir / "iterations" / project.run_id / "events.jsonl"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def run_events(reader: SseReader) -> list[tuple[str, dict[str, Any]]]:
    """The events.jsonl events a client received (every message but the server's own
    `state` pokes, `view` deltas and `pictures` redrawn)."""
    return [
        (name, json.loads(data))
        for _, name, data in list(reader.messages)
        if name not in ("state", "view", "pictures")
    ]


def test_twenty_clients_get_every_event_and_do_not_slow_the_loop(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    alone = loop_project(tmp_path / "alone", make_project)
    assert alone.runner("loop", timeout=300).returncode == 0
    watched = loop_project(tmp_path / "watched", make_project)
    with serving(watched, free_port()) as base:
        readers = [SseReader(f"{base}/api/events").start() for _ in range(CLIENTS)]
        assert all(reader.said_hello.wait(20) for reader in readers)
        before = len(event_lines(watched))
        assert watched.runner("loop", timeout=300).returncode == 0
        expected = [json.loads(line) for line in event_lines(watched)[before:]]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(
            len(run_events(reader)) < len(expected) for reader in readers
        ):
            time.sleep(0.2)
        for reader in readers:
            reader.stop.set()

    assert len(expected) >= ITERATIONS * 6  # started, agent, guard and finished events each
    for reader in readers:
        received = run_events(reader)
        assert received == [(event["type"], event) for event in expected]
        ids = [ident for ident, _, _ in list(reader.messages)]
        first = ids[0]
        assert first is not None, ids
        assert ids == list(range(first, first + len(ids)))  # nothing dropped in between
    baseline, with_clients = median_iteration_secs(alone), median_iteration_secs(watched)
    print(
        f"{CLIENTS} clients, each received all {len(expected)} events of the loop in order; "
        f"median iteration {baseline * 1000:.0f} ms alone, {with_clients * 1000:.0f} ms watched "
        f"({(with_clients / baseline - 1) * 100:+.1f}%)"
    )
    assert with_clients < baseline * (1 + MAX_SLOWDOWN)
