"""Reaping a child the runner started, with what it used: `os.wait4` in place of Popen's waitpid.

The resource use `wait4` returns covers the child and every descendant it (or bubblewrap's
init, inside the sandbox) waited for; its `ru_maxrss` is the largest resident set any of them
reached. Without a memory cgroup that is how the runner learns a session's processes came near
`[sandbox] memory_mb` (runner_shell.sandbox.watch). The child's exit status goes into its
Popen's `returncode`, so Popen never waits for it again.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from typing import Protocol

_FIRST_POLL_SECS = 0.0005
_LONGEST_POLL_SECS = 0.05


class UsageHeard(Protocol):
    """Who hears the resource use of a reaped child (a sandbox's limit watch)."""

    def reaped(self, usage: resource.struct_rusage) -> None: ...


def reap(
    process: subprocess.Popen[bytes], heard: UsageHeard | None = None, block: bool = False
) -> bool:
    """Whether `process` has ended, reaping it if it just did (waiting for that when `block`):
    its exit code set as Popen's, its resource use told to `heard`."""
    if process.returncode is not None:
        return True
    try:
        pid, status, usage = os.wait4(process.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped already, its status lost: Popen says what it says then
        process.wait()
        return True
    if pid == 0:
        return False
    process.returncode = os.waitstatus_to_exitcode(status)
    if heard is not None:
        heard.reaped(usage)
    return True


def wait_ended(
    process: subprocess.Popen[bytes], heard: UsageHeard | None, timeout_secs: float
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
    """Whether the child `pid` has not ended yet, without reaping it (its use stays to read)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False
