"""`runner tui` driven by Textual's pilot on a real four-slot `runner loop` (the tree, the
running jobs per slot, the events, an iteration's detail on Enter, stop through `runner stop`),
in tmux as a person sees it, and as `runner status` when not on a terminal."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Log, Static, Tree

from runner_shell.tui.app import RunnerTui
from tests.helpers.e2e import PYTHON, Project
from tests.helpers.watched_run import LEAVES, SLOTS, four_slot_run


@pytest.fixture
def running_loop(project: Project) -> Iterator[subprocess.Popen[bytes]]:
    """A real four-slot loop whose agents each take 6 s."""
    four_slot_run(project, 6.0)
    loop = subprocess.Popen(
        [PYTHON, "-m", "runner_shell", "loop"],
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


def _status(project: Project) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(project.runner("status", "--json").stdout)
    return found


def _wait_for(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_the_pilot_sees_the_tree_the_slots_the_events_a_detail_and_stops_the_loop(
    project: Project, running_loop: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _wait_for(lambda: len(_status(project).get("jobs", [])) == SLOTS, "four jobs running")

    async def scenario() -> dict[str, Any]:
        app = RunnerTui(project.root)
        seen: dict[str, Any] = {}
        async with app.run_test(size=(180, 50)) as pilot:
            await pilot.pause(1.5)
            tree = app.query_one("#tree", Tree)
            seen["labels"] = [str(node.label) for node in tree.root.children[0].children]
            jobs = app.query_one("#jobs", DataTable)
            seen["jobs"] = [jobs.get_row_at(index) for index in range(jobs.row_count)]
            # The first leaf's iteration done, Enter on its node shows the detail.
            for _ in range(120):
                if any(r["node_id"] == "n1" for r in app.history.values()):
                    break
                await pilot.pause(0.5)
            tree.focus()
            tree.move_cursor(tree.root.children[0].children[0])
            await pilot.press("enter")
            await pilot.pause(0.5)
            seen["detail"] = str(app.query_one("#detail", Static).render())
            seen["events"] = "\n".join(app.query_one("#events", Log).lines)
            app.save_screenshot(str(tmp_path / "tui.svg"))
            await pilot.press("s")
            await pilot.pause(0.5)
            seen["said"] = str(app.query_one("#said", Static).render())
        return seen

    seen = asyncio.run(scenario())
    assert len(seen["labels"]) == len(LEAVES)
    assert all(f"[{leaf}]" in label for leaf, label in zip(LEAVES, seen["labels"], strict=True))
    assert sum("running" in label for label in seen["labels"]) >= 1
    assert len(seen["jobs"]) == SLOTS
    assert {row[0] for row in seen["jobs"]} == {"0", "1", "2", "3"}  # each in its own slot
    assert all(row[3] == "executor" for row in seen["jobs"])
    assert "iteration 1" in seen["detail"] and "node n1" in seen["detail"]
    assert "--- tree diff" in seen["detail"]
    assert "agent started" in seen["events"]
    assert seen["said"] == "stop: requested (the loop stops after its current iteration)"
    assert running_loop.wait(timeout=90) == 0
    shot = (tmp_path / "tui.svg").read_text(encoding="utf-8")
    assert "n1" in shot
    keep = os.environ.get("RUNNER_SHOTS_DIR")
    if keep:
        shutil.copyfile(tmp_path / "tui.svg", Path(keep) / "tui-pilot.svg")


TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true", reason="tmux not installed")
def test_in_tmux_the_tree_and_a_running_job_show(
    project: Project, running_loop: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    assert TMUX is not None, "CI needs tmux: .ci/run installs it"
    _wait_for(lambda: len(_status(project).get("jobs", [])) >= 1, "a job running")
    session = f"runner-tui-{os.getpid()}"
    socket = str(tmp_path / "tmux.sock")
    env = " ".join(f"{key}={shlex_quote(value)}" for key, value in project.env.items())
    command = f"cd {shlex_quote(str(project.root))} && env {env} {PYTHON} -m runner_shell tui"
    tmux = [TMUX, "-S", socket]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", "180", "-y", "50", command], check=True
    )
    try:
        screen = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if "[n8]" in screen and "executor" in screen and "running" in screen:
                break
            time.sleep(0.3)
        assert "[n1]" in screen and "[n8]" in screen, screen
        assert "executor" in screen and "running" in screen, screen
        (tmp_path / "tmux.txt").write_text(screen, encoding="utf-8")
        keep = os.environ.get("RUNNER_SHOTS_DIR")
        if keep:
            shutil.copyfile(tmp_path / "tmux.txt", Path(keep) / "tui-tmux.txt")
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


def shlex_quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


def test_not_on_a_terminal_it_prints_runner_status(project: Project) -> None:
    four_slot_run(project, 0.1)
    shown = project.runner("tui")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == project.runner("status").stdout
