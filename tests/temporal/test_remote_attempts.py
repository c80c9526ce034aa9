"""A leaf whose first attempt fails its guard on a `runner worker`: the run branch takes none of
its files (they are on its attempt ref, on the loop's machine), and its second attempt, on a
worker too, starts from them, its prompt saying so, exactly as in a local slot
(docs/temporal.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_shell.remote.job_files import base_ref
from runner_shell.remote.keys import new_key_file
from tests.helpers.e2e import Project, ProjectFactory, node
from tests.helpers.second_attempt import RESUMED, commands, seen
from tests.temporal.conftest import TemporalServer
from tests.temporal.remote_project import Workers, bare

TREE = node("root", next_="decompose", children=[node("root.1")])


@pytest.fixture
def one_leaf(
    tmp_path: Path, make_project: ProjectFactory, temporal_server: TemporalServer
) -> Iterator[tuple[Project, Workers]]:
    """A run of one leaf whose jobs go to a task queue of its own, one worker polling it."""
    (tmp_path / "run").mkdir()
    project = make_project(tmp_path / "run", "started")
    url = bare(tmp_path / "shared.git")
    key_file = tmp_path / "job.key"
    new_key_file(key_file)
    queue = f"attempts-{tmp_path.name}"
    executor = {"kind": "temporal", "address": temporal_server.address, "task_queue": queue}
    executor |= {"key_file": str(key_file), "remote": url}
    project.prepare(TREE, parallel={"slots": 1}, executor=executor, **commands(project))
    workers = Workers(project, temporal_server, queue, url)
    try:
        yield project, workers
    finally:
        workers.stop()


def test_a_second_attempt_on_a_worker_starts_from_the_failed_first_attempts_files(
    one_leaf: tuple[Project, Workers],
) -> None:
    project, workers = one_leaf
    workers.start("worker-a")

    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stdout + result.stderr
    assert project.meta(1)["guard"] == "fail"
    assert project.meta(1)["attempt_files"] == 2
    assert project.meta(2)["guard"] == "pass"
    # The first attempt's files are on its attempt ref here, none on the run branch's commit.
    ref = f"refs/runner/attempts/{project.run_id}/1"
    assert project.git("show", f"{ref}:root.1.txt") == "41\n"
    assert project.git("show", f"{ref}:lib/root.1.sh") == "echo 42\n"
    # The second attempt's checkout, on the worker, held them; its prompt said so.
    first, second = seen(project)
    assert (first["try"], first["helper"], first["answer"]) == (1, False, None)
    assert (second["try"], second["helper"], second["answer"]) == (2, True, "41\n")
    assert RESUMED.format(1) in second["prompt"]
    assert "the guard failed" in second["prompt"]
    assert (project.root / "root.1.txt").read_text(encoding="utf-8") == "42\n"
    assert project.git("show", "HEAD:lib/root.1.sh") == "echo 42\n"
    # It started from a commit the loop pushed for it: the head with those files on it.
    started = _pushed_starts(project, workers.url)
    assert len(started) == 1, started
    assert project.git("rev-parse", f"{started[0]}^").strip() == _commit_of(project, 1)
    shown = subprocess.run(
        ["git", "-C", workers.url, "show", f"{started[0]}:root.1.txt"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout == "41\n"


def _commit_of(project: Project, iteration: int) -> str:
    log = project.git("log", "--format=%H %s")
    return next(line.split()[0] for line in log.splitlines() if f" iter {iteration} node " in line)


def _pushed_starts(project: Project, url: str) -> list[str]:
    """The commits the loop pushed for the run's jobs to start from that are not on the run
    branch (a node's previous attempt's files carried onto the head)."""
    line = set(project.git("rev-list", "HEAD").split())
    listed = project.git("ls-remote", url, f"refs/runner/bases/{project.run_id}/*")
    rows = [row.split() for row in listed.splitlines()]
    assert all(name == base_ref(project.run_id, sha) for sha, name in rows)
    return [sha for sha, _ in rows if sha not in line]
