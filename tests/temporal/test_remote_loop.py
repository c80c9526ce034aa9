"""`runner loop` with `[executor] kind = "temporal"`: its jobs run on `runner worker` processes,
each with its own clone of a bare repository the loop shares with them, and the run ends as the
same run does in local slots (docs/temporal.md)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.crash import spawn
from tests.helpers.e2e import Project, ProjectFactory
from tests.temporal.conftest import TemporalServer
from tests.temporal.relay import relay_to
from tests.temporal.remote_project import (
    LEAVES,
    SCRIPT,
    TREE,
    Workers,
    bare,
    executor_table,
    remote,
    until_sent,
)

__all__ = ["remote"]  # the fixture every test here takes


def _ended(project: Project) -> tuple[object, ...]:
    tree = (project.root / ".runner/state/tree.json").read_bytes()
    files = {leaf: (project.root / f"{leaf}.txt").read_text() for leaf in LEAVES}
    nodes = project.git("log", "--format=%(trailers:key=Runner-Node,valueonly)", "-5")
    return tree, files, sorted(nodes.split())


def test_a_loop_on_two_workers_ends_as_the_same_loop_in_local_slots(
    remote: tuple[Project, Workers], tmp_path: Path, make_project: ProjectFactory
) -> None:
    project, workers = remote
    workers.start("worker-a")
    workers.start("worker-b")

    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stderr
    (tmp_path / "local").mkdir()
    local = make_project(tmp_path / "local", "started")
    local.prepare(TREE, parallel={"slots": 4})
    local.agent_script_by_node(SCRIPT)
    assert local.runner("loop", timeout=150).returncode == 0
    assert _ended(project) == _ended(local)
    # Both workers took jobs, and the jobs' logs and events came back to the run.
    took = {path.parent.parent.name for path in tmp_path.glob("remote/worker-*/clones/*")}
    assert took == {"worker-a", "worker-b"}
    assert (project.iter_dir(1) / "guard.log").is_file()
    assert project.runner("audit").returncode == local.runner("audit").returncode


def test_a_loop_with_no_worker_on_its_queue_says_so_and_waits(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    loop = spawn(project, "loop")
    assert loop.stdout is not None
    first = loop.stdout.readline()
    while "reason=no_workers" not in first:
        assert first, loop.stderr.read() if loop.stderr else ""
        first = loop.stdout.readline()

    workers.start("late-worker")
    out, err = loop.communicate(timeout=150)

    assert loop.returncode == 0, err
    assert "loop: status=complete" in out
    events = (project.iter_dir(1).parent / "events.jsonl").read_text(encoding="utf-8")
    assert '"reason":"no_workers"' in events


def test_a_worker_of_another_repository_refuses_and_its_job_is_a_runner_error(
    remote: tuple[Project, Workers], tmp_path: Path
) -> None:
    project, workers = remote
    project.set_config(
        parallel={"slots": 1},
        executor={**executor_table(project), "remote": workers.url},
        loop={"max_consecutive_runner_errors": 1, "runner_error_backoff_secs": [1]},
    )
    project.commit_setup("one job at a time, the first runner error stops the loop")
    workers.url = bare(tmp_path / "another.git")
    workers.start("wrong-repository")

    result = project.runner("loop", timeout=150)

    assert result.returncode != 0
    assert "internal error" not in result.stderr
    meta = json.loads((project.iter_dir(1) / "meta.json").read_text(encoding="utf-8"))
    assert meta["error_kind"] == "runner", meta
    assert "has no start commit for it" in meta["error"]
    assert meta["attempts_after"] == meta["attempts_before"]
    assert not any((project.root / f"{leaf}.txt").exists() for leaf in LEAVES)


def test_a_loop_killed_with_remote_jobs_running_recovers_and_finishes(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    # Every run of a leaf writes its file (the killed loop's jobs still run on their workers,
    # and may run after the new loop's); the first runs of two leaves take a while.
    script: dict[tuple[str, int], dict[str, object]] = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 6} for leaf in LEAVES[:2]}
    script |= {(leaf, 2): SCRIPT[(leaf, 1)] for leaf in LEAVES}
    project.agent_script_by_node(script)
    workers.start("worker-a")
    workers.start("worker-b")
    loop = spawn(project, "loop")
    until_sent(project, 2, "*.json")
    loop.send_signal(signal.SIGKILL)
    loop.wait(10)

    assert project.runner("step").returncode != 0  # refused until `runner recover`
    recovered = project.runner("recover", timeout=60)
    assert recovered.returncode == 0, recovered.stderr
    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)
    assert project.runner("audit").returncode in (0, 1)


def test_a_loop_started_again_waits_for_the_jobs_a_killed_loop_sent(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 4} for leaf in LEAVES[:2]}
    project.agent_script_by_node(script)
    workers.start("worker-a")
    workers.start("worker-b")
    loop = spawn(project, "loop")
    until_sent(project, 4)
    loop.send_signal(signal.SIGKILL)
    loop.wait(10)
    assert project.runner("step").returncode != 0  # one slot: `runner recover` first

    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    subjects = project.git("log", "--format=%s", "-5").splitlines()
    assert all("status=done" in subject for subject in subjects), subjects
    # No job ran twice: each leaf's agent ran once, on the worker the first loop sent it to.
    runs = project.harness / "node_runs"
    assert {leaf: (runs / leaf).read_text() for leaf in LEAVES} == dict.fromkeys(LEAVES, "1")
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)


def test_a_loop_waits_out_its_temporal_server_stopped_for_a_while(
    remote: tuple[Project, Workers], temporal_server: TemporalServer
) -> None:
    project, workers = remote
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 3} for leaf in LEAVES}
    project.agent_script_by_node(script)
    workers.start("worker-a")
    workers.start("worker-b")
    loop = spawn(project, "loop")
    until_sent(project, 4)
    temporal_server.stop()
    time.sleep(12)
    temporal_server.start()

    out, err = loop.communicate(timeout=150)

    assert loop.returncode == 0, err
    assert "loop: status=complete" in out
    assert "reason=temporal_unavailable" in out, out
    assert "WARN" not in err  # the SDK's own retries are not the user's to read
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)


def test_a_job_of_a_worker_killed_mid_job_finishes_on_another_attempts_untouched(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    project.set_config(
        parallel={"slots": 1},
        executor={**executor_table(project), "remote": workers.url, "heartbeat_secs": 2},
    )
    project.commit_setup("one job at a time, a silent worker's job handed on after 2 s")
    script = dict(SCRIPT)
    script[("root.1", 1)] = {**SCRIPT[("root.1", 1)], "sleep": 30}
    script[("root.1", 2)] = SCRIPT[("root.1", 1)]
    project.agent_script_by_node(script)
    doomed = workers.start("doomed-worker")
    loop = spawn(project, "loop")
    started = project.harness / "records" / "1.json"
    for _ in range(600):
        if started.is_file():
            break
        time.sleep(0.05)
    os.killpg(doomed.pid, signal.SIGKILL)
    workers.start("second-worker")

    _, err = loop.communicate(timeout=150)

    assert loop.returncode == 0, err
    meta = json.loads((project.iter_dir(1) / "meta.json").read_text(encoding="utf-8"))
    assert (meta["status"], meta["error"]) == ("done", None)
    assert meta["attempts_after"] == meta["attempts_before"] == 0
    assert (project.harness / "node_runs" / "root.1").read_text() == "2"
    assert (project.root / "root.1.txt").read_text() == "root.1\n"


def test_a_loop_started_while_its_temporal_server_is_down_waits_for_it(
    remote: tuple[Project, Workers], temporal_server: TemporalServer
) -> None:
    project, workers = remote
    temporal_server.stop()
    try:
        loop = spawn(project, "loop")
        assert loop.stdout is not None
        said = loop.stdout.readline()
    finally:
        temporal_server.start()
    workers.start("worker-a")

    out, err = loop.communicate(timeout=150)

    assert "reason=temporal_unavailable" in said
    assert loop.returncode == 0, err
    assert "loop: status=complete" in out
    assert f"temporal server at {temporal_server.address} is unavailable" in err


def test_a_request_left_unreadable_is_one_line_naming_recover(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 4} for leaf in LEAVES}
    project.agent_script_by_node(script)
    workers.start("worker-a")
    loop = spawn(project, "loop")
    until_sent(project, 4)
    loop.send_signal(signal.SIGKILL)
    loop.wait(10)
    kept = sorted((project.root / ".git" / "runner-jobs").glob("*.request"))
    kept[0].write_text("{not json", encoding="utf-8")

    result = project.runner("loop", timeout=60)

    assert result.returncode != 0
    [line] = result.stderr.strip().splitlines()
    assert "run 'runner recover'" in line and "Traceback" not in result.stderr
    assert f"{kept[0]}: not the request of a job this loop can wait for" in line
    assert project.runner("recover", timeout=60).returncode == 0


def _one_job_then_stop(project: Project, workers: Workers, **executor: object) -> None:
    project.set_config(
        parallel={"slots": 1},
        executor={**executor_table(project), "remote": workers.url, **executor},
        loop={"max_consecutive_runner_errors": 1, "runner_error_backoff_secs": [1]},
    )
    project.commit_setup("one job at a time, the first runner error stops the loop")


def test_an_answer_changing_the_runners_config_is_refused_by_the_coordinator(
    remote: tuple[Project, Workers],
) -> None:
    # A worker whose answer changes .runner/state/config.toml (a hook the
    # next loop would run here) is refused; nothing of it is committed, no attempt is used.
    project, workers = remote
    _one_job_then_stop(project, workers)
    config_before = project.git("show", "HEAD:.runner/state/config.toml")
    workers.start("tampering-worker", lying="config")

    result = project.runner("loop", timeout=150)

    assert result.returncode != 0
    assert "internal error" not in result.stderr
    meta = json.loads((project.iter_dir(1) / "meta.json").read_text(encoding="utf-8"))
    assert meta["error_kind"] == "runner", meta
    assert "changes runner-owned files: .runner/state/config.toml" in meta["error"]
    assert "tampering-worker" in meta["error"]  # named by its --identity
    assert meta["attempts_after"] == meta["attempts_before"]
    assert project.git("show", "HEAD:.runner/state/config.toml") == config_before
    assert "on_iteration" not in (project.root / ".runner/state/config.toml").read_text()


def test_with_rejudge_a_pass_a_worker_made_up_does_not_count(
    remote: tuple[Project, Workers],
) -> None:
    # A worker that runs `true` instead of the job's guard says it passed;
    # with `[executor] rejudge = true` the coordinator runs the guard itself, and it fails.
    project, workers = remote
    _one_job_then_stop(project, workers, rejudge=True)
    project.guard_script([{"exit": 1, "stdout": "1 failed"}])
    workers.start("lying-worker", lying="verdict")

    result = project.runner("loop", timeout=150)

    assert result.returncode != 0
    meta = json.loads((project.iter_dir(1) / "meta.json").read_text(encoding="utf-8"))
    assert meta["status"] != "done" or meta["guard"] != "pass", meta
    assert "fails when run here on the answer ([executor] rejudge)" in (meta["error"] or ""), meta
    assert project.guard_calls() >= 1  # the coordinator's own run of the guard
    tree = json.loads((project.root / ".runner/state/tree.json").read_text(encoding="utf-8"))
    assert not any(child["passes"] for child in tree["children"])
    assert not (project.root / "root.1.txt").exists()


# How long the loop is cut off from the server and the remote (the campaign: 20-30 s).
CUT_SECS = 9.0


@pytest.mark.serial  # its timing is the partition's: a loaded machine blurs the cut
def test_a_loop_cut_off_from_server_and_remote_waits_and_goes_on(
    remote: tuple[Project, Workers], temporal_server: TemporalServer
) -> None:
    # Calls in flight when the link goes, and across the heal, are the
    # server not reached, never a refusal; the remote's too; nothing runs twice, no gap.
    project, workers = remote
    link = project.harness.parent / "loop-remote.git"
    link.symlink_to(workers.url)  # the loop's way to the remote, cut apart from the workers'
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 4} for leaf in LEAVES}
    project.agent_script_by_node(script)
    with relay_to(temporal_server.address) as relay:
        table = {**executor_table(project), "address": relay.address, "remote": str(link)}
        project.set_config(parallel={"slots": 4}, executor=table)
        project.commit_setup("the loop reaches the server through a relay the test cuts")
        workers.start("worker-a")
        workers.start("worker-b")
        loop = spawn(project, "loop")
        until_sent(project, 4)
        relay.cut()
        link.unlink()
        time.sleep(CUT_SECS)
        link.symlink_to(workers.url)
        relay.heal()

        out, err = loop.communicate(timeout=150)

    assert loop.returncode == 0, err
    assert "loop: status=complete" in out
    assert "reason=temporal_unavailable" in out, out
    assert "refused" not in err, err
    runs = project.harness / "node_runs"
    assert {leaf: (runs / leaf).read_text() for leaf in LEAVES} == dict.fromkeys(LEAVES, "1")
    numbers = project.git("log", "--format=%(trailers:key=Runner-Iter,valueonly)", "-5").split()
    assert sorted(map(int, numbers)) == [1, 2, 3, 4, 5]
    audit = project.runner("audit").stdout.splitlines()
    findings = [line for line in audit if line.startswith("audit: finding ")]
    assert all(" iter=- " in line for line in findings), findings


def test_with_rejudge_an_honest_pass_counts_once_its_guard_passes_here(
    remote: tuple[Project, Workers],
) -> None:
    project, workers = remote
    project.set_config(executor={**executor_table(project), "remote": workers.url, "rejudge": True})
    project.commit_setup("every remote pass judged again here")
    workers.start("worker-a")

    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    # Each leaf's guard ran twice: on its worker, then here on the answer (once, the head
    # moved or not).
    assert project.guard_calls() == 2 * len(LEAVES)
    assert all((project.root / f"{leaf}.txt").is_file() for leaf in LEAVES)
