"""The process between the runner and bubblewrap where no memory cgroup holds `memory_mb`:
it reports the largest resident set any process of the sandbox reached (docs/sandbox.md,
"memory_mb without a memory cgroup").

The runner cannot learn that peak itself. A child's `ru_maxrss` starts at its parent's
resident set (the kernel keeps the largest set of the memory the child left at `execve`, and
a child forked or vforked from the runner left the runner's), and bubblewrap's outer process
may exit on its init's report of the exit status without reaping that init, whose peak covers
the command's. This process is a child subreaper: bubblewrap's init, orphaned, becomes its
child; it reaps every child it is given, then writes the largest resident set among them (its
RUSAGE_CHILDREN, in KiB) and a newline to the descriptor it was given, and exits as bubblewrap
did. Its own set (a Python started with `-I -S`, a few MiB) is the floor of that number.

It runs by path with the standard library only (`python -I -S subreaper.py FD PARENT
ARGV...`), in the runner's session and process group: the runner's SIGKILL of the group ends it
with bubblewrap, its SIGTERM reaches bubblewrap and leaves this process waiting for it. It dies
with the runner's thread that started it, PARENT, as bubblewrap does with its parent
(`--die-with-parent`), so a runner killed with SIGKILL leaves no sandbox running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_EXEC_FAILED = 127
_FORWARDED_AWAY = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def main(args: list[str]) -> int:
    """Start `args[2:]`, reap it and every orphan given to this process, report the peak to
    descriptor `args[0]`; the exit status is the command's (-N: killed by signal N). Killed
    with the process `args[1]`, which started it."""
    report_fd, parent = int(args[0]), int(args[1])
    os.set_inheritable(report_fd, False)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above: nothing is started
        return -signal.SIGKILL
    subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    for signum in _FORWARDED_AWAY:  # a handler, not SIG_IGN: execve puts the default back
        signal.signal(signum, _ignore)
    child = os.fork()
    if child == 0:
        try:
            os.execvp(args[2], args[2:])
        except OSError as error:
            os.write(2, f"runner subreaper: cannot start {args[2]}: {error.strerror}\n".encode())
        os._exit(_EXEC_FAILED)
    status = _reap_all(child)
    if subreaper:
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        os.write(report_fd, f"{peak_kib}\n".encode("ascii"))
    os.close(report_fd)
    return os.waitstatus_to_exitcode(status)


def _reap_all(child: int) -> int:
    """Wait for `child` and every process orphaned to this one until none is left: the wait
    status of `child`."""
    status = 0
    while True:
        try:
            pid, found = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        if pid == child:
            status = found


def _ignore(signum: int, frame: object) -> None:
    """The signal was for bubblewrap, which has it too (the same process group)."""


def _exit_as(code: int) -> None:
    """Exit with `code`, or by the signal -`code` as the command was killed."""
    if code >= 0:
        sys.exit(code)
    with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    sys.exit(128 - code)


if __name__ == "__main__":
    _exit_as(main(sys.argv[1:]))
