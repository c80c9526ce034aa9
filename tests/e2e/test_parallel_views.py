"""`runner status` and `runner follow` while a real `runner loop` runs two jobs at once.

The agents are tests/e2e/test_parallel_loop.py's node-keyed fake, made to print a line every
few tenths of a second while it sleeps, so each job has live output of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.test_parallel_loop import NODE_AGENT, _flat_tree, _setup
from tests.helpers.e2e import Project

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
SLEEP = 'time.sleep(action.get("sleep", 0))'
assert SLEEP in NODE_AGENT
# The node agent, printing `<node> tick N` to stdout through its sleep.
PRINTING_AGENT = NODE_AGENT.replace(
    SLEEP,
    'for tick in range(int(action.get("sleep", 0) / 0.25)):\n'
    '    print(f"{node_id} tick {tick}", flush=True)\n'
    "    time.sleep(0.25)",
)


def printing_agents(project: Project, seconds: float, leaves: tuple[str, ...]) -> None:
    """Two leaves (or more) whose agents print and sleep `seconds`, with `slots` = 2."""
    actions = {leaf: [{"files": {f"{leaf}.txt": f"{leaf}\n"}, "sleep": seconds}] for leaf in leaves}
    _setup(project, _flat_tree(list(leaves)), actions, slots=2)
    (project.harness / "node_agent.py").write_text(PRINTING_AGENT, encoding="utf-8")


@pytest.fixture
def running_loop(project: Project) -> Iterator[subprocess.Popen[bytes]]:
    """A real `runner loop` in the background over two printing, sleeping agents."""
    printing_agents(project, 8, ("a", "b"))
    loop = subprocess.Popen(
        [sys.executable, "-m", "runner_shell", "loop"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield loop
    finally:
        if loop.poll() is None:
            loop.kill()
        loop.wait(timeout=30)


def status_json(project: Project) -> dict[str, Any]:
    result = project.runner("status", "--json")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    schema = json.loads((SCHEMAS / "views" / "status.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    return document


def wait_for_jobs(project: Project, count: int, timeout: float = 60) -> dict[str, Any]:
    """The status document once `count` jobs are running with their agents printing."""
    deadline = time.monotonic() + timeout
    runs = project.harness / "runs.txt"
    while time.monotonic() < deadline:
        if runs.exists() and len(runs.read_text(encoding="utf-8").splitlines()) >= count:
            document = status_json(project)
            if len(document.get("jobs", [])) == count:
                return document
        time.sleep(0.2)
    raise AssertionError(f"{count} jobs never ran together: {status_json(project)}")


def test_status_lists_both_running_jobs(
    project: Project, running_loop: subprocess.Popen[bytes]
) -> None:
    document = wait_for_jobs(project, 2)
    jobs = document["jobs"]
    assert [job["node_id"] for job in jobs] == ["a", "b"]
    assert [job["iteration"] for job in jobs] == sorted(job["iteration"] for job in jobs)
    assert all(job["alive"] and job["phase"] == "running" for job in jobs)
    assert document["running"] == {key: jobs[0][key] for key in document["running"]}
    assert document["interrupted"] is None
    states = {row["id"]: row["state"] for row in document["tree"]}
    assert states == {"root": "running", "a": "running", "b": "running"}

    time.sleep(1)  # the agents print every quarter second: their logs have lines by now
    text = project.runner("status")
    assert text.returncode == 0, text.stderr
    assert text.stderr == ""  # the jobs' iterations have no meta.json yet: not a warning
    lines = text.stdout.splitlines()
    running = [line for line in lines if line.startswith("status: running ")]
    assert [line.split()[2:4] for line in running] == [
        [f"iter={job['iteration']}", f"node={job['node_id']}"] for job in jobs
    ]
    night = [line for line in lines if line.startswith("running: ")]
    assert [line.split()[1:3] for line in night] == [
        [f"iter={job['iteration']}", f"node={job['node_id']}"] for job in jobs
    ]
    assert any(line.startswith("  | a tick") for line in lines), lines
    assert any(line.startswith("  | b tick") for line in lines), lines

    assert running_loop.wait(timeout=120) == 0
    after = status_json(project)
    assert "jobs" not in after and after["running"] is None
    assert {row["state"] for row in after["tree"]} == {"completed"}


def test_follow_tags_the_lines_of_interleaved_jobs(
    project: Project, running_loop: subprocess.Popen[bytes]
) -> None:
    jobs = {job["node_id"]: job["iteration"] for job in wait_for_jobs(project, 2)["jobs"]}
    assert running_loop.wait(timeout=120) == 0
    followed = project.runner("follow")
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    for node_id, iteration in jobs.items():
        tag = f"  [iter={iteration} node={node_id}] | {node_id} tick"
        assert any(line.startswith(tag) for line in lines), lines


def test_after_kill_9_both_jobs_show_interrupted_until_recovered(
    project: Project, running_loop: subprocess.Popen[bytes]
) -> None:
    jobs = wait_for_jobs(project, 2)["jobs"]
    running_loop.kill()
    running_loop.wait(timeout=10)
    document = status_json(project)
    assert document["running"] is None
    assert document["interrupted"] == {key: jobs[0][key] for key in document["interrupted"]}
    assert [(job["iteration"], job["alive"]) for job in document["jobs"]] == [
        (job["iteration"], False) for job in jobs
    ]
    assert "running" not in {row["state"] for row in document["tree"]}
    text = project.runner("status").stdout.splitlines()
    cut = [line for line in text if line.startswith("status: interrupted ")]
    assert [line.split()[2:4] for line in cut] == [
        [f"iter={job['iteration']}", f"node={job['node_id']}"] for job in jobs
    ]
    assert all(line.endswith("(its runner is gone; run 'runner recover')") for line in cut)
    assert not any(line.startswith("running: ") for line in text)
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    after = status_json(project)
    assert "jobs" not in after and after["interrupted"] is None
