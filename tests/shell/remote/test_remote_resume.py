"""A node's next attempt on a worker starts from its previous attempt's files, as in a local slot.

The loop carries the files of the node's failed attempt (on `refs/runner/attempts/<run>/<iter>`
here) onto the head it starts the job from, pushes that commit beside the start commit to the
shared remote, and names it in the request (`start`); the worker fetches it and resets its
slot to it, and the job's changes are still made from the start commit (docs/temporal.md).
Jobs run on the worker's job in this process (in_process.py).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from runner_shell.remote.coordinator import RemoteJobs
from runner_shell.remote.errors import JobRefused
from runner_shell.remote.job_files import JobRequest, base_ref
from runner_shell.remote.worker_job import run_job
from runner_shell.remote.worker_rules import WorkerRules
from tests.helpers.e2e import Project, ProjectFactory, node
from tests.helpers.second_attempt import RESUMED, commands, seen
from tests.shell.remote.in_process import InProcess, bare, loop_in_process

TREE = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
BASE = "a" * 40
START = "b" * 40


def _quiet(heartbeat: str) -> None:
    del heartbeat


def _request(start: str | None = None) -> JobRequest:
    return JobRequest("run-1", 3, BASE, "{}", 60.0, start=start)


def test_a_request_names_the_commit_its_checkout_starts_from() -> None:
    request = _request(start=START)

    assert JobRequest.from_json(request.to_json()) == request
    assert '"start":"' + START + '"' in request.to_json()
    assert JobRequest.from_json(_request().to_json()).start is None


def test_a_request_kept_before_it_named_a_start_starts_from_its_base() -> None:
    """A request a loop kept beside a journal before `start` was one of its fields."""
    older = _request().to_json().replace(',"start":null', "")
    assert '"start"' not in older

    assert JobRequest.from_json(older).start is None


@pytest.mark.parametrize(
    ("start", "said"),
    [("main", "start must be a commit id"), (BASE, "start must be another commit than base")],
)
def test_a_request_whose_start_is_no_other_commit_is_refused(start: str, said: str) -> None:
    with pytest.raises(JobRefused, match=said):
        JobRequest.from_json(_request(start=start).to_json())


@pytest.fixture
def resumed_run(
    tmp_path: Path, make_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Project, InProcess, str]]:
    """Two leaves in two slots, each wrong on its first attempt, all run on the worker."""
    (tmp_path / "run").mkdir()
    project = make_project(tmp_path / "run", "started")
    project.prepare(TREE, parallel={"slots": 2}, **commands(project))
    url = bare(tmp_path / "shared.git")
    rules = WorkerRules(writable=(str(project.harness),))
    executor = InProcess(lambda request: run_job(tmp_path / "worker", url, request, _quiet, rules))
    assert loop_in_process(project, RemoteJobs(executor, url), monkeypatch) == 0
    yield project, executor, url


def _requests(executor: InProcess) -> dict[int, JobRequest]:
    found = (JobRequest.from_json(text) for text in executor.asked.values())
    return {request.iteration: request for request in found}


def _git(url: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", url, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_second_attempt_on_a_worker_starts_from_the_first_attempts_files(
    resumed_run: tuple[Project, InProcess, str],
) -> None:
    project, _, _ = resumed_run
    assert all(child["passes"] for child in project.tree()["children"])
    first = {entry["node"]: entry for entry in seen(project) if entry["try"] == 1}
    second = {entry["node"]: entry for entry in seen(project) if entry["try"] == 2}
    assert set(first) == set(second) == {"root.1", "root.2"}
    for leaf in ("root.1", "root.2"):
        assert (first[leaf]["helper"], first[leaf]["answer"]) == (False, None)
        assert (second[leaf]["helper"], second[leaf]["answer"]) == (True, "41\n")
        assert RESUMED.format(first[leaf]["iter"]) in second[leaf]["prompt"]
        assert "the guard failed" in second[leaf]["prompt"]
        assert (project.root / f"{leaf}.txt").read_text(encoding="utf-8") == "42\n"
    # The audit finds only the test's own setup commit (a hand edit of the tree).
    audit = project.runner("audit").stdout.splitlines()
    findings = [line for line in audit if line.startswith("audit: finding ")]
    assert findings and all(" hand edit " in line for line in findings), audit


def test_the_request_names_the_carried_commit_and_the_remote_holds_it(
    resumed_run: tuple[Project, InProcess, str],
) -> None:
    _, executor, url = resumed_run
    requests = _requests(executor)
    resumed = {n: r for n, r in requests.items() if r.start is not None}
    assert len(resumed) == 2 and len(requests) == 4
    for request in resumed.values():
        assert request.start is not None
        # On the remote beside the start commit, its only parent that commit.
        assert _git(url, "rev-parse", base_ref(request.run_id, request.start)) == request.start
        assert _git(url, "rev-list", "--parents", "-n", "1", request.start).split()[1:] == [
            request.base
        ]
    # A first attempt starts from the line.
    assert all(requests[n].start is None for n in requests if n not in resumed)


def test_a_worker_refuses_a_start_that_is_not_its_base_with_files_on_it(
    resumed_run: tuple[Project, InProcess, str], tmp_path: Path
) -> None:
    _, executor, url = resumed_run
    requests = _requests(executor)
    request = next(r for r in requests.values() if r.start is not None)
    earlier = next(r.base for r in requests.values() if r.base != request.base)
    forged = attrs.evolve(request, start=earlier)  # on the remote, but not on this base

    with pytest.raises(JobRefused, match=r"is not its start commit \w+ with files on it"):
        run_job(tmp_path / "worker-2", url, forged.to_json(), _quiet)
    with pytest.raises(JobRefused, match="has no checkout's start for it"):
        run_job(tmp_path / "worker-3", url, attrs.evolve(request, start=START).to_json(), _quiet)
