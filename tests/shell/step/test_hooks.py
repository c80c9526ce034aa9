"""Hooks run real programs with the event on stdin; a failing, hanging or missing one never
raises and never outlives its timeout."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from runner_core.loop import events
from runner_core.loop.events import EventOrigin, event_line
from runner_core.run.config import HOOK_NAMES, HooksConfig
from runner_shell.step.hooks import HookOutcome, fire_hook, run_hook

COMPLETE = events.complete(EventOrigin("run-1", 7, None, "2026-11-22T02:00:00Z"), 6)


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_hook_gets_the_event_json_on_stdin_in_the_repo_root(tmp_path: Path) -> None:
    hook = script(
        tmp_path,
        "save.py",
        "import os, sys\nopen('got.json', 'w').write(sys.stdin.read() + os.getcwd())\n",
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    result = run_hook("on_complete", [str(hook)], event_line(COMPLETE), repo, 10)
    assert (result.outcome, result.exit_code, result.detail) == (HookOutcome.OK, 0, "")
    saved = (repo / "got.json").read_text()
    line, cwd = saved.split("\n")
    assert json.loads(line)["type"] == "complete"
    assert Path(cwd).resolve() == repo.resolve()


def test_a_failing_hook_reports_its_exit_code_and_last_stderr_line(tmp_path: Path) -> None:
    hook = script(
        tmp_path, "fail.py", "import sys\nprint('first\\nboom', file=sys.stderr)\nsys.exit(3)\n"
    )
    result = run_hook("on_stuck", [str(hook)], "{}\n", tmp_path, 10)
    assert (result.outcome, result.exit_code, result.detail) == (
        HookOutcome.FAILED,
        3,
        "exit 3: boom",
    )
    assert result.stderr_line() == "runner: hook on_stuck failed: exit 3: boom (the run goes on)"


def test_a_hook_killed_by_a_signal_says_which(tmp_path: Path) -> None:
    hook = script(tmp_path, "kill.py", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    result = run_hook("on_wait", [str(hook)], "{}\n", tmp_path, 10)
    assert (result.outcome, result.detail) == (HookOutcome.FAILED, "killed by signal 15")


def test_a_hanging_hook_and_its_children_are_killed_at_the_timeout(tmp_path: Path) -> None:
    hook = script(
        tmp_path,
        "hang.py",
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "time.sleep(60)\n",
    )
    began = time.monotonic()
    result = run_hook("on_iteration", [str(hook)], "{}\n", tmp_path, 1.0)
    assert time.monotonic() - began < 10
    assert (result.outcome, result.exit_code) == (HookOutcome.TIMED_OUT, None)
    assert result.detail == "still running after 1s, killed"
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child of the killed hook is a zombie until init reaps it.
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ")[1].startswith("Z"))


def test_a_missing_program_is_a_result_not_an_exception(tmp_path: Path) -> None:
    result = run_hook("on_limit", ["no-such-hook-program-xyz"], "{}\n", tmp_path, 10)
    assert result.outcome is HookOutcome.NOT_STARTED
    assert result.detail == "cannot run 'no-such-hook-program-xyz': No such file or directory"


def test_a_file_that_is_not_executable_is_not_started(tmp_path: Path) -> None:
    plain = tmp_path / "plain.sh"
    plain.write_text("echo hi\n")
    result = run_hook("on_limit", [str(plain)], "{}\n", tmp_path, 10)
    assert result.outcome is HookOutcome.NOT_STARTED
    assert "Permission denied" in result.detail


def test_a_hook_that_ignores_its_stdin_still_succeeds(tmp_path: Path) -> None:
    hook = script(tmp_path, "quiet.py", "import sys\nsys.stdin.close()\n")
    result = run_hook("on_error", [str(hook)], "x" * 1_000_000, tmp_path, 10)
    assert result.outcome is HookOutcome.OK


def test_an_event_fires_its_configured_hook(tmp_path: Path) -> None:
    hook = script(
        tmp_path, "save.py", "import sys\nopen('got.json', 'w').write(sys.stdin.read())\n"
    )
    result = fire_hook(HooksConfig(on_complete=(str(hook),)), COMPLETE, tmp_path, 10)
    assert result is not None and result.ok and result.hook == "on_complete"
    assert (tmp_path / "got.json").read_text() == event_line(COMPLETE)


@pytest.mark.parametrize(
    "hooks",
    [HooksConfig(), HooksConfig(on_stuck=("false",))],
    ids=["no hook configured", "another event's hook"],
)
def test_an_event_without_a_configured_hook_runs_nothing(
    tmp_path: Path, hooks: HooksConfig
) -> None:
    assert fire_hook(hooks, COMPLETE, tmp_path, 10) is None


def test_an_event_type_without_a_hook_runs_nothing(tmp_path: Path) -> None:
    started = events.agent_started(EventOrigin("run-1", 7, "a", "x"), "executor", "codex")
    every = HooksConfig(**{name: ("false",) for name in HOOK_NAMES})
    assert fire_hook(every, started, tmp_path, 10) is None


def test_a_hook_that_backgrounds_a_setsid_process_is_done_when_it_exits(tmp_path: Path) -> None:
    """The left-behind process holds the hook's stderr open: the hook is still done (ok) at its
    own exit, not reported timed out after waiting for the pipe."""
    hook = script(
        tmp_path,
        "detach.py",
        "import os, subprocess, sys\n"
        "sleeper = [sys.executable, '-c', 'import time; time.sleep(30)']\n"
        "child = subprocess.Popen(['setsid', *sleeper])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('detached', file=sys.stderr, flush=True)\n",
    )
    began = time.monotonic()
    result = run_hook("on_complete", [str(hook)], "{}\n", tmp_path, 8.0)
    took = time.monotonic() - began
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert (result.outcome, result.exit_code, result.detail) == (HookOutcome.OK, 0, "")
        assert took < 3, f"the step was held {took:.1f}s by what the hook left running"
    finally:
        os.kill(child, 9)


def test_what_a_hook_leaves_in_its_group_is_ended_when_it_exits(tmp_path: Path) -> None:
    hook = script(
        tmp_path,
        "leave.py",
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " stderr=subprocess.DEVNULL)\n"
        "open('child.pid', 'w').write(str(child.pid))\n",
    )
    began = time.monotonic()
    result = run_hook("on_iteration", [str(hook)], "{}\n", tmp_path, 8.0)
    assert result.outcome is HookOutcome.OK and time.monotonic() - began < 3
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


@pytest.mark.parametrize("reads_stdin", [True, False], ids=["reads stdin", "never reads stdin"])
def test_every_hook_is_bounded_by_the_same_timeout(tmp_path: Path, reads_stdin: bool) -> None:
    """A hang before reading a large stdin is timed like any other hang: from the hook's start."""
    body = "import sys, time\n" + ("sys.stdin.read()\n" if reads_stdin else "") + "time.sleep(60)\n"
    hook = script(tmp_path, "slow.py", body)
    began = time.monotonic()
    result = run_hook("on_wait", [str(hook)], "x" * 1_000_000, tmp_path, 1.0)
    took = time.monotonic() - began
    assert result.outcome is HookOutcome.TIMED_OUT
    assert 1.0 <= took < 2.5 and abs(result.duration_secs - took) < 0.5
