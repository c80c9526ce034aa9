"""Watching a remote job (docs/temporal.md, "Watching remote jobs"): while it runs on a
`runner worker`, `runner status` names its worker and its agent's output is in the run's events
log already; once the loop ends every event of its iteration is there exactly once."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.core.views.test_reports_core import assert_valid
from tests.helpers.crash import spawn
from tests.helpers.e2e import Project
from tests.temporal.remote_project import DONE, LEAVES, SCRIPT, Workers, remote

__all__ = ["remote"]  # the fixture, used by name

WATCHED = LEAVES[0]
LINES = ("first line of the watched agent", "second line of the watched agent")
SEEN_SECS = 60.0


def _events(project: Project) -> list[dict[str, Any]]:
    log = project.iter_dir(1).parent / "events.jsonl"
    if not log.is_file():
        return []
    text = log.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _watched_line(project: Project) -> str | None:
    said = project.runner("status").stdout.splitlines()
    return next((line for line in said if f" node={WATCHED} " in line), None)


def test_a_remote_jobs_worker_and_live_output_are_seen_while_it_runs(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    watched = {"stdout": "".join(f"{line}\n" for line in LINES), "sleep": 5, "output": DONE}
    project.agent_script_by_node({**SCRIPT, (WATCHED, 1): {**SCRIPT[(WATCHED, 1)], **watched}})
    workers.start("watching-worker")
    loop = spawn(project, "loop")
    try:
        line, live = _while_it_runs(project)
        out, err = loop.communicate(timeout=150)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait(10)

    assert loop.returncode == 0, err
    assert line is not None and line.endswith(" worker=watching-worker"), line
    iteration = int(re.search(r" iter=(\d+) ", line).group(1))  # type: ignore[union-attr]
    assert all(event["iter"] == iteration for event in live)
    ended = [event for event in _events(project) if event.get("iter") == iteration]
    texts = [json.dumps(event, sort_keys=True) for event in ended]
    assert len(texts) == len(set(texts)), "an event of the remote job was emitted twice"
    kinds = [event["type"] for event in ended]
    for kind in ("agent_started", "agent_finished", "guard_started", "guard_finished"):
        assert kinds.count(kind) == 1, kinds
    printed = [
        text
        for event in ended
        if event["type"] == "agent_output" and event["source"] != "guard"
        for text in event["lines"]
    ]
    assert tuple(printed) == LINES
    assert "loop: status=complete" in out


def _while_it_runs(project: Project) -> tuple[str | None, list[dict[str, Any]]]:
    """The watched job's status line once it names a worker (its `--json` entry then checked
    too), and its agent output events in the run's log before its agent finished."""
    give_up = time.monotonic() + SEEN_SECS
    line: str | None = None
    while time.monotonic() < give_up:
        found = _watched_line(project)
        if line is None and found is not None and " worker=" in found:
            line = found
            _check_json(project)
        events = [e for e in _events(project) if e.get("node_id") == WATCHED]
        finished = any(e["type"] == "agent_finished" for e in events)
        output = [e for e in events if e["type"] == "agent_output"]
        assert not finished, f"its output came only with its answer (status: {line})"
        if line is not None and output:
            return line, output
        time.sleep(0.2)
    raise AssertionError(f"the watched job was not seen in {SEEN_SECS:g} s: {line}")


def _check_json(project: Project) -> None:
    """`runner status --json` while the watched job runs: valid, its entry naming its worker."""
    document = json.loads(project.runner("status", "--json").stdout)
    assert_valid(document, "status")
    workers = {job["node_id"]: job["worker"] for job in document["jobs"]}
    assert workers[WATCHED] == "watching-worker", workers
