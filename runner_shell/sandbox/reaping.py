"""Reaping a child the runner started, telling its sandbox's limit watch the moment it did.

The watch then reads what the child reported as it ended (the sandbox's memory peak, from the
subreaper in front of bubblewrap: runner_shell.sandbox.subreaper). The child's exit status goes
into its Popen's `returncode`, so Popen never waits for it again.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Protocol

_FIRST_POLL_SECS = 0.0005
_LONGEST_POLL_SECS = 0.05


class ReapHeard(Protocol):
    """Who hears that a child was reaped (a sandbox's limit watch)."""

    def reaped(self) -> None: ...


def reap(
    process: subprocess.Popen[bytes], heard: ReapHeard | None = None, block: bool = False
) -> bool:
    """Whether `process` has ended, reaping it if it just did (waiting for that when `block`):
    its exit code set as Popen's, `heard` told."""
    if process.returncode is not None:
        return True
    try:
        pid, status = os.waitpid(process.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped already, its status lost: Popen says what it says then
        process.wait()
    else:
        if pid == 0:
            return False
        process.returncode = os.waitstatus_to_exitcode(status)
    if heard is not None:
        heard.reaped()
    return True


def wait_ended(
    process: subprocess.Popen[bytes], heard: ReapHeard | None, timeout_secs: float
) -> bool:
    """Reap `process` once it ends, for at most `timeout_secs`: whether it has ended (polled
    at once, then less often, as Popen's own wait with a timeout does)."""
    give_up_at = time.monotonic() + timeout_secs
    delay = _FIRST_POLL_SECS
    while not reap(process, heard):
        left = give_up_at - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, _LONGEST_POLL_SECS)
    return True


def running(pid: int) -> bool:
    """Whether the child `pid` has not ended yet, without reaping it (its status stays to read)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False
