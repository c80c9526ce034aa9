"""`runner loop --detach` and the docs/overnight.md recipes (tmux, the systemd user unit)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.e2e import Project, node

DONE = {"status": "done", "summary": "Did it."}
UNIT = ROOT / "docs/examples/runner-loop@.service"


def _wait_gone(pid: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"pid {pid} still runs")


def _started(project: Project) -> str:
    project.write_tree(node("root"))
    result = project.runner("start")
    assert result.returncode == 0, result.stderr
    return result.stdout.split("run=")[1].split()[0]


def test_loop_detach_runs_in_its_own_session_with_a_log(unstarted_project: Project) -> None:
    project = unstarted_project
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE, "sleep": 1}})
    result = project.runner("loop", "--detach")
    assert result.returncode == 0, result.stderr
    first, hints = result.stdout.splitlines()
    found = re.fullmatch(rf"loop: detached run={run} pid=(\d+) log=(.+)", first)
    assert found, first
    pid, log = int(found[1]), Path(found[2])
    assert os.getsid(pid) == pid  # its own session: the terminal's hangup never reaches it
    assert f"runner --run {run} stop" in hints and f"runner --run {run} status" in hints
    assert log == project.root / ".git/runner/runs" / run / "loop.log"
    _wait_gone(pid)
    assert f"loop: step run={run} iter=1 node=root status=done guard=pass" in log.read_text()
    assert project.git("branch", "--show-current").strip() == "main"
    again = project.runner("status")
    assert again.returncode == 0, again.stderr


def test_the_tmux_recipe_runs_the_loop(unstarted_project: Project) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    project = unstarted_project
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    recipe = (ROOT / "docs/overnight.md").read_text()
    assert "tmux new-session -d -s runner 'runner loop;" in recipe
    socket = project.root.parent / "tmux.sock"
    bin_dir = Path(sys.executable).parent
    env = {**project.env, "PATH": f"{bin_dir}{os.pathsep}{project.env.get('PATH', '')}"}
    command = f"cd {project.root} && runner loop > {project.root.parent}/tmux.out 2>&1"
    subprocess.run(
        ["tmux", "-S", str(socket), "new-session", "-d", "-s", "runner", command],
        env=env,
        check=True,
        timeout=30,
    )
    deadline = time.monotonic() + 60
    out = project.root.parent / "tmux.out"
    while time.monotonic() < deadline and "status=complete" not in (
        out.read_text() if out.exists() else ""
    ):
        time.sleep(0.2)
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], check=False, timeout=30)
    assert f"run={run}" in out.read_text()
    assert "status=complete" in out.read_text()


def test_the_systemd_unit_verifies_and_its_exec_start_runs(unstarted_project: Project) -> None:
    text = UNIT.read_text()
    if shutil.which("systemd-analyze") is not None:  # else its ExecStart below is the test
        instance = unstarted_project.root.parent / "runner-loop@run-x.service"
        instance.write_text(text)
        verified = subprocess.run(
            ["systemd-analyze", "verify", str(instance)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verified.returncode == 0 and verified.stderr == "", verified.stderr
    project = unstarted_project
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    (line,) = [x for x in text.splitlines() if x.startswith("ExecStart=")]
    exec_start = (
        line.removeprefix("ExecStart=")
        .replace("${RUNNER_REPO}", str(project.root))
        .replace("%i", run)
        .split()
    )
    bin_dir = Path(sys.executable).parent
    env = {**project.env, "PATH": f"{bin_dir}{os.pathsep}{project.env.get('PATH', '')}"}
    done = subprocess.run(exec_start, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 2), done.stderr
    assert f"run={run}" in done.stdout


# One iteration in flight when the stop arrives: the one-at-a-time loop's count.
@pytest.mark.one_slot
def test_stop_from_the_users_checkout_pauses_a_detached_loop(unstarted_project: Project) -> None:
    from tests.e2e.test_parallel_loop import _flat_tree

    project = unstarted_project
    project.write_tree(_flat_tree(["a", "b"]))
    result = project.runner("start")
    assert result.returncode == 0, result.stderr
    run = result.stdout.split("run=")[1].split()[0]
    # The first iteration waits for the test's stop: it is in flight when the stop arrives,
    # however slowly `runner stop` starts on a loaded machine.
    project.agent_script({1: {"output": DONE, "wait_for": "stopped"}, 2: {"output": DONE}})
    detached = project.runner("loop", "--detach")
    assert detached.returncode == 0, detached.stderr
    pid = int(detached.stdout.split("pid=")[1].split()[0])
    log = project.root / ".git/runner/runs" / run / "loop.log"
    deadline = time.monotonic() + 30
    while project.runner("stop").returncode != 0:  # until the loop holds its run's lock
        assert time.monotonic() < deadline, "the detached loop never took its lock"
        time.sleep(0.2)
    (project.harness / "stopped").write_text("stop asked\n")
    _wait_gone(pid)
    assert f"loop: status=paused run={run} steps=1" in log.read_text()
    assert project.git("branch", "--show-current").strip() == "main"
