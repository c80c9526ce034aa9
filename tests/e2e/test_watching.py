"""End-to-end: watching a run from another terminal and from the loop's own: `runner follow`
replays the current loop only, then follows it to its end (or waits for one to start), and
`runner loop` on a terminal ticks its progress line and shows the agent's live output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.e2e import PYTHON, Project, lines, node

LEAF = node("root", max_attempts=1)
DONE = {"status": "done", "summary": "did it"}
RETRY = {"status": "retry", "summary": "not yet"}


def _background(project: Project, *args: str) -> subprocess.Popen[str]:
    """`runner <args>` in the background; its stderr goes to `<harness>/<command>.err`."""
    with (project.harness / f"{args[0]}.err").open("w", encoding="utf-8") as stderr:
        return subprocess.Popen(
            [PYTHON, "-m", "runner_shell", *args],
            cwd=project.root,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def _waiting(run: str) -> str:
    return f"follow: waiting for a loop of run {run} to start (Ctrl-C stops)"


def _wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _events_path(project: Project) -> Path:
    return project.runner_dir / "iterations" / project.run_id / "events.jsonl"


def _events(project: Project) -> list[dict[str, Any]]:
    text = _events_path(project).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _stuck_then_complete(project: Project) -> str:
    """A run whose first loop stopped at a stuck leaf and whose second, after `node retry`,
    completed it."""
    run = project.prepare(LEAF)
    project.agent_script({1: {"output": RETRY}, 2: {"output": DONE}})
    assert project.runner("loop").returncode == 3
    assert project.runner("node", "retry", "root").returncode == 0
    assert project.runner("loop").returncode == 0
    return run


# ---------------------------------------------------------------- runner follow


def test_follow_on_a_finished_run_replays_its_last_loop_not_the_first_loop_end(
    project: Project,
) -> None:
    run = _stuck_then_complete(project)

    followed = project.runner("follow", timeout=30)

    assert followed.returncode == 0, followed.stderr
    shown = lines(followed.stdout)
    assert shown[0] == f"loop: start run={run} iter=2"
    assert f"loop: step run={run} iter=2 node=root status=done guard=pass" in shown
    assert shown[-1] == f"loop: status=complete run={run} steps=1"
    assert not any("iter=1" in line or "status=stuck" in line for line in shown)


def test_follow_n_shows_the_last_events_and_since_replays_from_an_iteration(
    project: Project,
) -> None:
    run = _stuck_then_complete(project)

    last = project.runner("follow", "-n", "1")
    since = project.runner("follow", "--since", "1", "--json")

    assert lines(last.stdout) == [f"loop: status=complete run={run} steps=1"]
    assert [json.loads(line) for line in lines(since.stdout)] == _events(project)
    assert "status=stuck" in project.runner("follow", "--since", "1").stdout


def test_follow_started_before_any_loop_waits_for_one_and_follows_it_to_its_end(
    project: Project,
) -> None:
    run = project.prepare(LEAF)
    project.agent_script({1: {"sleep": 1, "output": DONE}})
    follower = _background(project, "follow")
    _wait_for_line(project.harness / "follow.err", _waiting(run))
    assert follower.poll() is None, "follow returned before any loop started"

    assert project.runner("loop").returncode == 0
    stdout, _ = follower.communicate(timeout=30)

    stderr = (project.harness / "follow.err").read_text(encoding="utf-8")
    assert follower.returncode == 0, stderr
    assert lines(stderr) == [_waiting(run)]
    assert lines(stdout)[0] == f"loop: start run={run} iter=1"
    assert lines(stdout)[-1] == f"loop: status=complete run={run} steps=1"


@pytest.mark.parametrize("replay", [(), ("-n", "1"), ("--since", "1")], ids=["loop", "-n", "since"])
def test_follow_between_two_loops_waits_for_the_next_loop_and_follows_it_to_its_end(
    project: Project, replay: tuple[str, ...]
) -> None:
    """The first loop stopped at a stuck leaf: follow replays what it is asked for, then waits
    (it used to exit 0 at once) and follows the loop `runner loop` starts after `node retry`."""
    run = project.prepare(LEAF)
    project.agent_script({1: {"output": RETRY}, 2: {"sleep": 1, "output": DONE}})
    assert project.runner("loop").returncode == 3
    waiting = (
        f"follow: the last loop of run {run} ended (status=stuck); "
        "waiting for the next one (Ctrl-C stops)"
    )
    follower = _background(project, "follow", *replay)
    _wait_for_line(project.harness / "follow.err", waiting)
    time.sleep(0.5)
    assert follower.poll() is None, "follow returned between two loops"

    assert project.runner("node", "retry", "root").returncode == 0
    assert project.runner("loop").returncode == 0
    stdout, _ = follower.communicate(timeout=30)

    stderr = (project.harness / "follow.err").read_text(encoding="utf-8")
    assert follower.returncode == 0, stderr
    assert lines(stderr) == [waiting]
    shown = lines(stdout)
    assert f"loop: start run={run} iter=2" in shown
    assert shown[-1] == f"loop: status=complete run={run} steps=1"
    if replay == ("--since", "1"):
        assert any("status=stuck" in line for line in shown)


def _wait_for_line(path: Path, wanted: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and wanted in path.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, f"{wanted!r} never written to {path}"
        time.sleep(0.05)


def test_ctrl_c_while_follow_waits_exits_130_in_one_line(project: Project) -> None:
    run = project.prepare(LEAF)
    follower = _background(project, "follow")
    _wait_for_line(project.harness / "follow.err", _waiting(run))

    follower.send_signal(signal.SIGINT)
    follower.communicate(timeout=30)

    assert follower.returncode == 130
    stderr = (project.harness / "follow.err").read_text(encoding="utf-8")
    assert lines(stderr) == [_waiting(run), "runner: interrupted"]


def test_follow_started_during_a_resumed_loop_follows_it_not_the_old_stuck_line(
    project: Project,
) -> None:
    run = project.prepare(LEAF)
    project.agent_script({1: {"output": RETRY}, 2: {"sleep": 2, "output": DONE}})
    assert project.runner("loop").returncode == 3
    assert project.runner("node", "retry", "root").returncode == 0
    loop = _background(project, "loop")
    _wait_for(project.harness / "records" / "2.json")

    followed = project.runner("follow", timeout=30)
    loop.communicate(timeout=30)

    assert followed.returncode == 0, followed.stderr
    shown = lines(followed.stdout)
    assert "status=stuck" not in followed.stdout
    assert shown[0] == f"loop: start run={run} iter=2"
    assert shown[-1] == f"loop: status=complete run={run} steps=1"


def test_follow_s_help_says_its_json_is_json_lines(project: Project) -> None:
    shown = project.runner("follow", "--help").stdout

    assert "JSON Lines" in shown and "one JSON document" not in shown
    assert "-n N" in shown and "--since ITER" in shown


# ---------------------------------------------------------------- runner loop on a terminal


def _loop_on_a_terminal(project: Project, *args: str) -> tuple[int, str]:
    """`runner loop` with stdout and stderr on a pseudo-terminal: its exit code and all it
    showed there, in order."""
    controller, terminal = os.openpty()
    try:
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop", *args],
            cwd=project.root,
            env=project.env,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the loop has ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        code = loop.wait(timeout=60)
    finally:
        os.close(controller)
    return code, shown.decode("utf-8")


SLOW = {1: {"stdout": "halfway there\n", "sleep": 3, "output": DONE}}


def test_loop_on_a_terminal_ticks_its_progress_line_and_shows_live_agent_output(
    project: Project,
) -> None:
    run = project.prepare(node("root"))
    project.agent_script(SLOW)

    code, shown = _loop_on_a_terminal(project)

    assert code == 0, shown
    step = shown.index(f"loop: step run={run} iter=1 node=root status=done guard=pass")
    assert "[iter 1/100] node root · 0/1 leaves passed · 00:00 elapsed" in shown[:step]
    assert "[iter 1/100] node root · 0/1 leaves passed · 00:02 elapsed" in shown[:step]
    assert "  | halfway there" in shown[:step]


def test_loop_quiet_on_a_terminal_ticks_without_the_agent_s_output(project: Project) -> None:
    project.prepare(node("root"))
    project.agent_script(SLOW)

    code, shown = _loop_on_a_terminal(project, "--quiet")

    assert code == 0, shown
    assert "00:02 elapsed" in shown
    assert "halfway there" not in shown


def test_piped_loop_output_is_the_loop_lines_alone(project: Project) -> None:
    run = project.prepare(node("root"))
    project.agent_script(SLOW)

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status=done guard=pass",
        f"loop: status=complete run={run} steps=1 started_at_iter=1",
    ]
    assert "halfway there" not in result.stderr and "elapsed" not in result.stderr


# ---------------------------------------------------------------- a clone without refs/runner/*

COSTLY = {"usage": {"cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}, "output": DONE}
SIX_LEAVES = node("root", children=[node(f"root.{n}", order=n) for n in range(1, 7)])


def _clone_without_runner_refs(project: Project, base: Path) -> Project:
    """A clone of the run branch alone: no `refs/runner/*`, no iteration directories."""
    root = base / "clone"
    subprocess.run(["git", "clone", "--quiet", str(project.root), str(root)], check=True)
    copy = Project(root, project.harness, project.scripts, project.env)
    assert copy.git("for-each-ref", "refs/runner/").strip() == ""
    assert copy.git("branch", "--show-current").strip() == f"runner/{project.run_id}"
    return copy


# One slot: the loop stops at the very iteration that reaches the budget. With several slots
# the jobs already running when it is reached finish too, the documented bound
# (docs/parallel.md; test_parallel_scenarios.py pins it).
@pytest.mark.one_slot
def test_a_clone_without_the_runner_refs_counts_every_iteration_once_and_stops_at_the_budget(
    project: Project, tmp_path: Path
) -> None:
    run = project.prepare(SIX_LEAVES, budget={"max_cost_usd": 1.0})
    project.agent_script({n: COSTLY for n in range(1, 7)})
    assert project.runner("loop", "--max-steps", "2").returncode == 0
    copy = _clone_without_runner_refs(project, tmp_path)

    resumed = copy.runner("loop")

    assert resumed.returncode == 1, resumed.stderr
    assert lines(resumed.stdout)[-1].startswith(
        f"loop: status=budget run={run} budget=cost_usd spent=1 limit=1 steps=2"
    )
    assert "budget: cost_usd spent=1 limit=1 (reached)" in lines(copy.runner("status").stdout)
    history = json.loads(copy.runner("history", "--json").stdout)
    assert [row["iter"] for row in history["iterations"]] == [1, 2, 3, 4]
    report = json.loads(copy.runner("report", "--json").stdout)
    assert report["budgets"] == [
        {"budget": "cost_usd", "spent": 1.0, "limit": 1.0, "exhausted": True}
    ]
    refused = copy.runner("step")
    assert refused.returncode == 1 and "budget" in refused.stderr
