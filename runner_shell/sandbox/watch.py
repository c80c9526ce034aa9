"""Whether a running sandbox reached one of its limits, asked while it runs and once after.

`pids_max` and `memory_mb` are read from the sandbox's cgroup, where it has one
(runner_shell.sandbox.cgroups: the kernel counts the forks it refused and the processes it
killed). `tmp_mb` is the private /tmp found full: the runner opens that tmpfs from outside,
through the sandboxed command's `/proc/<pid>/root/tmp` (bubblewrap's first process inside
stays in the host's root; its child is the command), and keeps the descriptor, so its fill is
still read after the sandbox has ended and its mount namespace with it. The same holds for the
runner as root and as an unprivileged user (it may read its own sandbox's /proc). Without a
cgroup, a process past RLIMIT_NPROC is counted by the runner itself (`_tasks`); one past
RLIMIT_DATA is refused its allocation and nothing counts that: a session that failed after one
of its processes came near `memory_mb` (runner_core.run.sandbox_config.came_near_memory; the
largest resident set of any of them, reported by the subreaper in front of bubblewrap,
runner_shell.sandbox.subreaper) is taken as having reached it. A single request far beyond
what the process held is not seen that way: the session then ends as the program does.
`disk_mb` is the checkout's growth, ignored files and its `.git` included: the runner sums the
blocks of everything in it before the session starts (`checkout_blocks`), then every DISK_SECS
at least (ten times as long as the last count took, on a large checkout), and once more when
it has ended.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from runner_core.run.sandbox_config import LimitHit, came_near_memory
from runner_shell.sandbox.cgroups import SandboxGroup

# How often a running sandbox's limits are read at most.
CHECK_SECS = 0.05
# How long the start of a sandbox is waited for to open its /tmp (bubblewrap sets it up in
# milliseconds; a loaded machine is given more).
ATTACH_SECS = 5.0
_ATTACH_POLL_SECS = 0.002
# How often the runner's user's tasks outside the sandbox are counted, where RLIMIT_NPROC
# holds pids_max (the sandbox's own are counted at every check).
OUTSIDE_SECS = 1.0
_PAGE = 4096
# /tmp counts as full with less than this left (a write that failed at the limit leaves the
# last partial block), or with no inode left.
_FULL_SLACK_BYTES = 1024 * 1024
# How often the checkout's size is counted at most (a walk of every file in it).
DISK_SECS = 1.0
_DISK_COST_FACTOR = 10


class LimitWatch:
    """The limits of one sandbox whose outer bubblewrap process is `pid`."""

    def __init__(
        self,
        pid: int,
        group: SandboxGroup | None,
        tmp_bytes: int | None,
        nproc: int | None = None,
        data_bytes: int | None = None,
        disk: tuple[Path, int, int] | None = None,
        peak_fd: int | None = None,
    ) -> None:
        self._pid = pid
        # The subreaper's report, where it stands between `pid` and bubblewrap (it owns it).
        self._peak_fd = peak_fd
        self._outer = (pid,) if peak_fd is None else ()
        self._group = group
        # RLIMIT_NPROC, where no pids cgroup counts the sandbox's processes: the runner counts
        # them itself.
        self._nproc = nproc if group is None or group.pids is None else None
        self._command: int | None = None
        self._counted = 0.0
        self._outside = 0
        self._tmp_total = None if tmp_bytes is None else -(-tmp_bytes // _PAGE) * _PAGE
        self._tmp_fd: int | None = None
        self._checked = 0.0
        # RLIMIT_DATA, where no memory cgroup holds memory_mb, and the largest resident set
        # of the sandbox's processes, as the subreaper reported it.
        self._data_bytes = data_bytes if group is None or group.memory is None else None
        self._peak_bytes = 0
        # The checkout, how much it may grow, and its size before the session started.
        self._disk = disk
        self._disk_due = 0.0
        self.reached: str | None = None  # the first limit found reached
        # When RLIMIT_NPROC held the pids_max reached: the runner's user's tasks outside the
        # sandbox that counted against it (the message says so: they are not the agent's).
        self.outside_tasks: int | None = None

    def stop(self) -> bool:
        """Whether the running sandbox has reached a limit and must end now."""
        if self.reached is None:
            self.reached = self.check()
        return self.reached is not None

    def reaped(self) -> None:
        """The runner's child was reaped: the subreaper's report, if any, is read now (it
        wrote it before exiting; none when it was killed)."""
        if self._peak_fd is None:
            return
        os.set_blocking(self._peak_fd, False)
        with contextlib.suppress(OSError, ValueError):
            self._peak_bytes = int(os.read(self._peak_fd, 64).decode("ascii")) * 1024

    def finish(self, failed: bool = False) -> LimitHit | None:
        """The limit the sandbox reached, read once more now that it is over (`failed`: it
        ended with an error of its own, not by the runner's deadline); /tmp let go."""
        try:
            if self.reached is None:
                self.reached = self.check(ended=True)
            if self.reached is None and came_near_memory(
                failed, self._peak_bytes, self._data_bytes
            ):
                self.reached = "memory_mb"
        finally:
            self.close()
        return None if self.reached is None else LimitHit(self.reached, self.outside_tasks)

    def attach(self, running: Callable[[], bool]) -> None:
        """Open the sandbox's /tmp as soon as its command has started (within ATTACH_SECS),
        so that a command filling it and ending at once is still seen; `running` says whether
        bubblewrap has not exited yet."""
        if self._tmp_total is None:
            return
        give_up_at = time.monotonic() + ATTACH_SECS
        while self._tmp_fd is None and running() and time.monotonic() < give_up_at:
            self._tmp_fd = self._open_tmp(self._tmp_total)
            if self._tmp_fd is None:
                time.sleep(_ATTACH_POLL_SECS)

    def check(self, ended: bool = False) -> str | None:
        """The limit reached (`pids_max`, `memory_mb`, `tmp_mb`), or None; while it runs, read
        at most every CHECK_SECS (`ended`: read now, the sandbox is over)."""
        now = time.monotonic()
        if not ended and now - self._checked < CHECK_SECS:
            return None
        self._checked = now
        reached = None if self._group is None else self._group.reached()
        if reached is not None:
            return reached
        if self._nproc is not None and not ended and self._tasks() >= self._nproc:
            self.outside_tasks = self._outside
            return "pids_max"
        if self._disk_grown(now, ended):
            return "disk_mb"
        if self._tmp_total is None:
            return None
        if self._tmp_fd is None and not ended:
            self._tmp_fd = self._open_tmp(self._tmp_total)
        return "tmp_mb" if self._tmp_fd is not None and _full(self._tmp_fd) else None

    def _disk_grown(self, now: float, ended: bool) -> bool:
        """Whether the checkout grew past `disk_mb` since the session started (counted at
        most every DISK_SECS while it runs, at once when `ended`)."""
        if self._disk is None or (not ended and now < self._disk_due):
            return False
        directory, limit, before = self._disk
        used = checkout_blocks(directory)
        took = time.monotonic() - now
        self._disk_due = now + max(DISK_SECS, took * _DISK_COST_FACTOR)
        return used - before > limit

    def _commands(self) -> list[int]:
        """The processes bubblewrap's first process inside started: the command, in the
        sandbox's root (that first process stays in the host's). Bubblewrap is the runner's
        child, or the subreaper's."""
        outer = self._outer or tuple(_children(self._pid))
        inits = [inside for pid in outer for inside in _children(pid)]
        return [command for inside in inits for command in _children(inside)]

    def _tasks(self) -> int:
        """How many tasks RLIMIT_NPROC counts against the sandbox: every task (threads
        included) of the runner's user, the sandbox's among them (the kernel charges them to
        the user who made its user namespace too, against the limit bwrap was started with).
        The sandbox's own are read from its /proc at every check; the others (the runner's,
        other sandboxes') from the host's every OUTSIDE_SECS, the host's /proc being larger."""
        if self._command is None:
            commands = self._commands()
            self._command = commands[0] if commands else None
        if self._command is None:
            return 0
        inside = _tasks_in(f"/proc/{self._command}/root/proc", None)
        now = time.monotonic()
        if now - self._counted >= OUTSIDE_SECS:
            self._counted = now
            self._outside = max(_tasks_in("/proc", os.getuid()) - inside, 0)
        return inside + self._outside

    def _open_tmp(self, total: int) -> int | None:
        """A descriptor of the sandbox's own /tmp, once the command inside has started: the
        tmpfs of exactly `total` bytes its process sees (before, its root is the host's)."""
        for command in self._commands():
            try:
                fd = os.open(f"/proc/{command}/root/tmp", os.O_PATH | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                found = os.fstatvfs(fd)
            except OSError:
                found = None
            if found is not None and found.f_blocks * found.f_frsize == total:
                return fd
            os.close(fd)
        return None

    def close(self) -> None:
        """Let go of the sandbox's /tmp (its memory is freed once nothing holds it) and of the
        subreaper's report."""
        if self._tmp_fd is not None:
            os.close(self._tmp_fd)
            self._tmp_fd = None
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None


def _tasks_in(proc: str, uid: int | None) -> int:
    """The tasks of the processes listed in the /proc at `proc`, of `uid` only when given."""
    count = 0
    with contextlib.suppress(OSError), os.scandir(proc) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and (uid is None or entry.stat().st_uid == uid):
                    count += len(os.listdir(f"{proc}/{entry.name}/task"))
    return count


def checkout_blocks(top: Path) -> int:
    """The bytes the file system gave every entry under `top` (a sparse file counts what it
    holds), never following a symlink; what vanishes meanwhile counts nothing."""
    total = 0
    stack = [top]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
    return total


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as file:
            return [int(word) for word in file.read().split()]
    except (OSError, ValueError):
        return []


def _full(fd: int) -> bool:
    with contextlib.suppress(OSError):
        found = os.fstatvfs(fd)
        free = found.f_bavail * found.f_frsize
        total = found.f_blocks * found.f_frsize
        return free < min(_FULL_SLACK_BYTES, total // 16) or (
            found.f_files > 0 and found.f_favail == 0
        )
    return False
