"""Partitions between machines simulated by network namespaces (root only, tests/temporal/
netns.py): the Temporal server and a `git daemon` serving the shared repository on one
machine, the loop on another, the workers on the host; a link set down by `ip` is a real
partition (connections in flight hang, new ones find no route), not a relay that closes them.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.helpers.e2e import PYTHON, Project, ProjectFactory
from tests.temporal.conftest import TemporalServer
from tests.temporal.netns import Machine, Network, network
from tests.temporal.remote_project import (
    LEAVES,
    SCRIPT,
    Workers,
    executor_table,
    remote_project,
    until_sent,
)

# How long the loop is cut off from the server and the remote: the 20-30 s that made a loop
# exit once the link was back.
CUT_SECS = 20.0
GIT_PORT = 9418
SERVED_SECS = 20.0
WAIT_SECS = 60.0


@attrs.frozen
class Machines:
    """The run's machines: the server's (Temporal and git), the loop's; the host's workers."""

    net: Network
    server: Machine
    loop: Machine
    project: Project
    workers: Workers
    git_url: str  # the shared repository through the server's machine
    bare: Path  # the same, on this machine's disk


def _git_daemon(net: Network, on: Machine, base: Path) -> str:
    """A `git daemon` on `on` serving (and taking pushes to) the repositories under `base`."""
    argv = ["git", "daemon", f"--listen={on.address}", f"--port={GIT_PORT}", "--reuseaddr"]
    argv += ["--export-all", "--enable=receive-pack", f"--base-path={base}", str(base)]
    net.start(on, argv, base / "git-daemon.log")
    url = f"git://{on.address}:{GIT_PORT}/shared.git"
    deadline = time.monotonic() + SERVED_SECS
    while subprocess.run(["git", "ls-remote", url], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, (base / "git-daemon.log").read_text()
        time.sleep(0.2)
    return url


@pytest.fixture
def machines(tmp_path: Path, make_project: ProjectFactory) -> Iterator[Machines]:
    with network() as net:
        on_server, on_loop = net.machine("server"), net.machine("loop")
        state = tmp_path / "temporal"
        state.mkdir()
        server = TemporalServer(
            state, ip=on_server.address, prefix=on_server.prefix, bind="0.0.0.0"
        )
        server.start()
        try:
            project, queue, path = remote_project(tmp_path / "remote", make_project, server)
            url = _git_daemon(net, on_server, tmp_path / "remote")
            # The loop reaches the shared repository through the server's machine; the workers,
            # on the host, by its path.
            table = {**executor_table(project), "remote": url, "heartbeat_secs": 6}
            project.set_config(parallel={"slots": 4}, executor=table)
            project.commit_setup("the loop on a machine of its own")
            workers = Workers(project, server, queue, path)
            try:
                yield Machines(net, on_server, on_loop, project, workers, url, Path(path))
            finally:
                workers.stop()
        finally:
            server.stop()


def _loop_on(machines: Machines) -> subprocess.Popen[str]:
    project = machines.project
    return subprocess.Popen(
        [*machines.loop.prefix, PYTHON, "-m", "runner_shell", "loop"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )


def _every_leaf_passed_and_audit_clean(project: Project, runs_at_most: int) -> None:
    tree = json.loads((project.root / ".runner/state/tree.json").read_text(encoding="utf-8"))
    assert all(child["passes"] for child in tree["children"]), tree
    runs = project.harness / "node_runs"
    counts = {leaf: int((runs / leaf).read_text()) for leaf in LEAVES}
    assert all(count <= runs_at_most for count in counts.values()), counts
    numbers = project.git("log", "--format=%(trailers:key=Runner-Iter,valueonly)").split()
    for number in map(int, numbers):
        meta = json.loads((project.iter_dir(number) / "meta.json").read_text(encoding="utf-8"))
        assert meta["attempts_after"] == meta["attempts_before"], meta
    # The test's own setup commits (iter=-) are hand edits to the run; nothing else is found.
    audit = project.runner("audit").stdout.splitlines()
    findings = [line for line in audit if line.startswith("audit: finding ")]
    assert all(" iter=- " in line for line in findings), findings


def _committed(project: Project) -> list[int]:
    numbers = project.git("log", "--format=%(trailers:key=Runner-Iter,valueonly)").split()
    return sorted(map(int, numbers))


def _until_committed(project: Project, count: int, loop: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while len(_committed(project)) < count:
        assert loop.poll() is None, loop.communicate()
        assert time.monotonic() < deadline, f"not {count} iterations committed"
        time.sleep(0.2)


def _kill_with_job_out(project: Project, loop: subprocess.Popen[str], number: int) -> None:
    """`kill -9` of the loop once job `number` is out and no merge is in flight (the run's
    own journal gone: a loop started again takes the remote jobs up itself)."""
    until_sent(project, 1, f"{number}.request")
    journal = project.root / ".git" / "runner-journal.json"
    deadline = time.monotonic() + WAIT_SECS
    while journal.exists():
        assert time.monotonic() < deadline, "the merge in flight never ended"
        time.sleep(0.05)
    loop.kill()
    loop.wait(10)


@pytest.mark.serial  # its timing is the partition's: a loaded machine blurs the cut
def test_a_loop_cut_off_for_twenty_seconds_goes_on_and_once_killed_is_taken_up_again(
    machines: Machines,
) -> None:
    # The loop cut off from the server and the git remote for 20 s with four
    # jobs out says so and waits, then merges them once the link is back; killed with the
    # fifth job out, the loop started again waits for that job instead of running it again.
    project, workers = machines.project, machines.workers
    script = dict(SCRIPT)
    script |= {(leaf, 1): {**SCRIPT[(leaf, 1)], "sleep": 4} for leaf in LEAVES[:4]}
    script[(LEAVES[4], 1)] = {**SCRIPT[(LEAVES[4], 1)], "sleep": 8}
    project.agent_script_by_node(script)
    workers.start("worker-a")
    workers.start("worker-b")
    loop = _loop_on(machines)
    try:
        until_sent(project, 4)
        machines.loop.cut()
        time.sleep(CUT_SECS)
        machines.loop.heal()
        _until_committed(project, 4, loop)  # the loop went on once the link was back
        _kill_with_job_out(project, loop, len(LEAVES))
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait(10)
    events = (project.iter_dir(1).parent / "events.jsonl").read_text(encoding="utf-8")
    assert '"reason":"temporal_unavailable"' in events
    assert _committed(project) == [1, 2, 3, 4]

    again = _loop_on(machines)
    out, err = again.communicate(timeout=WAIT_SECS)

    assert again.returncode == 0, err
    assert "loop: status=complete" in out
    assert "refused" not in err, err
    assert _committed(project) == list(range(1, len(LEAVES) + 1))
    _every_leaf_passed_and_audit_clean(project, runs_at_most=1)


def _until_file(path: Path) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


# How long a worker is cut off in silence: far past its job's heartbeat timeout (6 s); its
# agent runs on past the heal, and its answer comes after it.
WORKER_CUT_SECS = 20.0
LATE_AGENT_SECS = 25
LATE_MARGIN_SECS = 5.0


def _answers_of(bare: Path, iteration: int) -> list[str]:
    """The refs of the answers to job `iteration` on the shared repository: one per attempt."""
    listed = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/runner/jobs/"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ref for ref in listed if ref.split("/")[4] == str(iteration)]


@pytest.mark.serial  # its timing is the partition's and the heartbeats'
def test_a_worker_cut_off_in_silence_loses_its_job_and_its_late_answer_is_never_taken(
    machines: Machines,
) -> None:
    # A worker whose link goes silent mid-job stops heartbeating: Temporal
    # hands its job to the other worker, whose answer the loop takes; the cut worker's agent
    # finishes after the heal, and its answer, on its attempt's own ref, is no one's. The loop
    # killed with the next job out, the loop started again takes that job's answer.
    project, workers = machines.project, machines.workers
    script = dict(SCRIPT)
    late = {"files": {f"{LEAVES[0]}.txt": "the late answer\n"}, "sleep": LATE_AGENT_SECS}
    script[(LEAVES[0], 1)] = {**SCRIPT[(LEAVES[0], 1)], **late}
    script[(LEAVES[0], 2)] = SCRIPT[(LEAVES[0], 1)]
    script[(LEAVES[1], 1)] = {**SCRIPT[(LEAVES[1], 1)], "sleep": 4}  # out when the loop is killed
    project.agent_script_by_node(script)
    project.set_config(parallel={"slots": 1}, executor=executor_table(project))
    project.commit_setup("one job at a time: the first is the cut worker's")
    workers.url = machines.git_url  # each worker reaches the repository by the network too
    cut, other = machines.net.machine("wa"), machines.net.machine("wb")
    workers.start("worker-a", prefix=cut.prefix)
    loop = _loop_on(machines)
    try:
        _until_file(project.harness / "node_runs" / LEAVES[0])  # its agent runs on worker-a
        late_by = time.monotonic() + LATE_AGENT_SECS + LATE_MARGIN_SECS
        workers.start("worker-b", prefix=other.prefix)
        cut.cut()
        time.sleep(WORKER_CUT_SECS)
        cut.heal()
        _until_committed(project, 1, loop)
        _kill_with_job_out(project, loop, 2)
        loop = _loop_on(machines)
        out, err = loop.communicate(timeout=WAIT_SECS)
        time.sleep(max(0.0, late_by - time.monotonic()))  # worker-a's agent has ended by now
    finally:
        cut.heal()
        if loop.poll() is None:
            loop.kill()
            loop.wait(10)

    assert loop.returncode == 0, err
    assert "loop: status=complete" in out
    assert _committed(project) == list(range(1, len(LEAVES) + 1))
    runs = project.harness / "node_runs"
    assert (runs / LEAVES[0]).read_text() == "2"  # once on each worker
    taken = (project.root / f"{LEAVES[0]}.txt").read_text(encoding="utf-8")
    assert taken == f"{LEAVES[0]}\n"  # worker-b's answer, not the late one
    # The answer taken is the second attempt's, on its own ref; the late first attempt's
    # (heartbeats refused once its link is back, it is cancelled) never replaces it.
    answers = _answers_of(machines.bare, 1)
    assert any(ref.split("/")[-1].startswith("2-") for ref in answers), answers
    _every_leaf_passed_and_audit_clean(project, runs_at_most=2)
