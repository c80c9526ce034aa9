"""`runner recover` after a loop with remote jobs was killed (docs/temporal.md, "The loop
killed, and started again"): each job's answer that is on the server is taken, judged and
committed as the loop takes one, in iteration order; only the jobs without one are recorded
as interrupted, each with the reason its answer was not taken."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from runner_shell.remote.errors import JobFailed
from runner_shell.remote.job_files import JobRequest, job_id
from runner_shell.remote.keys import read_key_file
from runner_shell.remote.temporal import TemporalExecutor
from tests.helpers.crash import spawn
from tests.helpers.e2e import Project
from tests.temporal.conftest import TemporalServer
from tests.temporal.relay import relay_to
from tests.temporal.remote_project import (
    LEAVES,
    SCRIPT,
    Workers,
    executor_table,
    remote,
    until_sent,
)

__all__ = ["remote"]  # the fixture, used by name

ANSWERED_SECS = 60.0


def _answered(url: str, iterations: set[int]) -> None:
    """Until the shared remote holds an answer (its attempt's ref) of each of `iterations`."""
    deadline = time.monotonic() + ANSWERED_SECS
    while True:
        listed = subprocess.run(
            ["git", "for-each-ref", "--format=%(refname)", "refs/runner/jobs/"],
            cwd=url,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if iterations <= {int(ref.split("/")[4]) for ref in listed}:
            return
        assert time.monotonic() < deadline, f"no answers of {iterations} in {listed}"
        time.sleep(0.1)


def _committed(project: Project) -> list[int]:
    numbers = project.git("log", "--format=%(trailers:key=Runner-Iter,valueonly)").split()
    return sorted(map(int, numbers))


def _meta(project: Project, iteration: int) -> dict[str, object]:
    found = json.loads((project.iter_dir(iteration) / "meta.json").read_text(encoding="utf-8"))
    assert isinstance(found, dict)
    return found


def test_recover_takes_the_answers_a_killed_loop_left_and_records_only_the_rest(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    # The first leaf's first run outlasts the kill and recover; the next three answer meanwhile,
    # and wait behind it (nothing merges before iteration 1).
    script = dict(SCRIPT)
    script[(LEAVES[0], 1)] = {**SCRIPT[(LEAVES[0], 1)], "sleep": 25}
    script[(LEAVES[0], 2)] = SCRIPT[(LEAVES[0], 1)]
    project.agent_script_by_node(script)
    workers.start("worker-a")
    workers.start("worker-b")
    loop = spawn(project, "loop")
    until_sent(project, 4)
    _answered(workers.url, {2, 3, 4})
    loop.send_signal(signal.SIGKILL)
    loop.wait(10)
    assert _committed(project) == []  # every answer waits behind iteration 1

    recovered = project.runner("recover", timeout=90)

    assert recovered.returncode == 0, recovered.stderr
    said = recovered.stdout.splitlines()
    assert any("status=interrupted" in line and " iter=1 " in line for line in said), said
    assert "recover: iter=1 answer not taken: its worker has not answered" in said
    for number in (2, 3, 4):
        assert any("status=answer-taken" in line and f" iter={number} " in line for line in said)
    assert "status=clean" not in recovered.stdout
    assert _meta(project, 1)["error_kind"] == "runner"
    assert _meta(project, 1)["attempts_after"] == _meta(project, 1)["attempts_before"]
    for number in (2, 3, 4):
        meta = _meta(project, number)
        assert (meta["status"], meta["guard"], meta["error_kind"]) == ("done", "pass", None)
    # Nothing of the killed loop's is left for a loop started again to wait for.
    assert not list((project.root / ".git" / "runner-jobs").glob("*"))

    result = project.runner("loop", timeout=120)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    runs = project.harness / "node_runs"
    # The answered leaves ran once, on the workers; the one recorded as interrupted twice.
    assert {leaf: (runs / leaf).read_text() for leaf in LEAVES[1:4]} == dict.fromkeys(
        LEAVES[1:4], "1"
    )
    assert (runs / LEAVES[0]).read_text() == "2"
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)
    assert _committed(project) == list(range(1, len(LEAVES) + 2))
    # The audit finds nothing of the run's iterations (the test's own setup commit, iter=-,
    # is a hand edit to it).
    audit = project.runner("audit").stdout.splitlines()
    findings = [line for line in audit if line.startswith("audit: finding ")]
    assert all(" iter=- " in line for line in findings), findings


def test_recover_with_the_server_out_of_reach_records_each_job_with_why(
    remote: tuple[Project, Workers], temporal_server: TemporalServer
) -> None:
    project, workers = remote
    # The first two leaves' first runs outlast the kill: nothing is merged before it.
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 3} for leaf in LEAVES[:2]}
    script |= {(leaf, 2): SCRIPT[(leaf, 1)] for leaf in LEAVES}
    project.agent_script_by_node(script)
    with relay_to(temporal_server.address) as relay:
        table = {**executor_table(project), "address": relay.address, "remote": workers.url}
        project.set_config(parallel={"slots": 2}, executor=table)
        project.commit_setup("the loop reaches the server through a relay the test cuts")
        workers.start("worker-a")
        loop = spawn(project, "loop")
        until_sent(project, 2)
        loop.send_signal(signal.SIGKILL)
        loop.wait(10)
        relay.cut()

        recovered = project.runner("recover", timeout=90)

        assert recovered.returncode == 0, recovered.stderr
        said = recovered.stdout.splitlines()
        for number in (1, 2):
            assert any("status=interrupted" in line and f" iter={number} " in line for line in said)
            why = f"recover: iter={number} answer not taken: temporal server at {relay.address}"
            assert any(line.startswith(why) for line in said), said
            meta = _meta(project, number)
            assert meta["attempts_after"] == meta["attempts_before"], meta
        relay.heal()
        result = project.runner("loop", timeout=120)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    runs = project.harness / "node_runs"
    assert all(int((runs / leaf).read_text()) <= 2 for leaf in LEAVES)


def _a_job_held_on_its_worker(
    project: Project, workers: Workers
) -> tuple[subprocess.Popen[str], JobRequest]:
    """A loop of one slot whose first job's agent waits for two minutes on the one worker,
    once that agent has started, and the job's request."""
    script = dict(SCRIPT)
    script[(LEAVES[0], 1)] = {**SCRIPT[(LEAVES[0], 1)], "wait_for": "never"}
    script |= {(leaf, 2): SCRIPT[(leaf, 1)] for leaf in LEAVES}
    project.agent_script_by_node(script)
    table = {**executor_table(project), "remote": workers.url, "heartbeat_secs": 3}
    project.set_config(parallel={"slots": 1}, executor=table, iteration_timeout_secs=150)
    project.commit_setup("one job at a time, heartbeats every second")
    workers.start("worker-a")
    loop = spawn(project, "loop")
    started = project.harness / "node_runs" / LEAVES[0]
    deadline = time.monotonic() + ANSWERED_SECS
    while not started.exists():  # its agent runs on the worker
        assert time.monotonic() < deadline and loop.poll() is None
        time.sleep(0.1)
    request = JobRequest.from_json(
        next((project.root / ".git/runner-jobs").glob("*.request")).read_text()
    )
    return loop, request


def _cancelled_and_the_worker_free(project: Project, workers: Workers, name: str) -> None:
    """Job `name`'s workflow ended without an answer, and a loop started again finishes the
    run at once: the worker is not held by the cancelled job's agent (it would wait two
    minutes), which runs again, and every leaf is done."""
    key = read_key_file(workers.key_file, "key_file")
    server = TemporalExecutor.connect(workers.address, "default", workers.queue, 10, key)
    with server, pytest.raises(JobFailed):  # its workflow ended, cancelled: no answer comes
        server.result(name, 10)
    began = time.monotonic()
    result = project.runner("loop", timeout=120)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    assert time.monotonic() - began < 90
    assert (project.harness / "node_runs" / LEAVES[0]).read_text() == "2"
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)


def test_recover_cancels_the_workflow_of_a_job_it_records_as_interrupted(
    remote: tuple[Project, Workers],
) -> None:
    """The job a killed loop left, its agent waiting for two minutes on the one worker: recover
    records it as interrupted and cancels its workflow, the worker stops it at its next
    heartbeat, and a loop started again has its worker at once."""
    project, workers = remote
    loop, request = _a_job_held_on_its_worker(project, workers)
    loop.send_signal(signal.SIGKILL)
    loop.wait(10)

    recovered = project.runner("recover", timeout=60)

    assert recovered.returncode == 0, recovered.stderr
    said = recovered.stdout.splitlines()
    name = job_id(request.run_id, request.iteration, request.base)
    assert "recover: iter=1 answer not taken: its worker has not answered" in said
    assert f"recover: iter=1 job {name} cancelled: its worker stops it" in said, said
    _cancelled_and_the_worker_free(project, workers, name)


def test_a_loop_stopped_by_a_signal_cancels_the_workflow_of_the_job_it_commits_as_interrupted(
    remote: tuple[Project, Workers],
) -> None:
    """The same job, the loop stopped by SIGINT instead of killed: the loop commits the job as
    interrupted and cancels its workflow itself, says so, and its worker is free at once."""
    project, workers = remote
    loop, request = _a_job_held_on_its_worker(project, workers)
    loop.send_signal(signal.SIGINT)
    out, err = loop.communicate(timeout=60)

    name = job_id(request.run_id, request.iteration, request.base)
    assert f"loop: iter=1 job {name} cancelled: its worker stops it" in out.splitlines(), out
    said = out.splitlines()
    assert any("status=interrupted" in line and " iter=1 " in line for line in said), err
    assert _meta(project, 1)["attempts_after"] == _meta(project, 1)["attempts_before"]
    _cancelled_and_the_worker_free(project, workers, name)
