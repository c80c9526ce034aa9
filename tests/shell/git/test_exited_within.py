"""Waiting for a git process's exit: woken when it exits, never past the deadline."""

from __future__ import annotations

import subprocess
import sys
import time

from runner_shell.git.hardened import exited_within


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_child_that_exits_is_reaped_as_soon_as_it_does() -> None:
    proc = _child("import time; time.sleep(0.2)")
    started = time.monotonic()
    assert exited_within(proc, 10.0)
    waited = time.monotonic() - started
    assert proc.returncode == 0
    assert waited < 5.0


def test_a_child_still_running_at_the_deadline_is_left_running() -> None:
    proc = _child("import time; time.sleep(30)")
    try:
        started = time.monotonic()
        assert not exited_within(proc, 0.2)
        assert 0.15 <= time.monotonic() - started < 10.0
        assert proc.returncode is None
    finally:
        proc.kill()
        proc.wait()


def test_a_child_already_reaped_counts_as_exited() -> None:
    proc = _child("pass")
    proc.wait()
    assert exited_within(proc, 0.0)
    assert proc.returncode == 0
