"""The limits a sandboxed process runs under: its memory, its processes, its files, its /tmp.

`[sandbox] memory_mb`, `pids_max`, `disk_mb` and `tmp_mb` (docs/sandbox.md). Where the runner
can make a cgroup for the sandbox (runner_shell.sandbox.cgroups), `pids_max` and `memory_mb`
are that group's, summed over every process in it. Elsewhere they are resource limits that
bubblewrap and everything it starts inherit, set by util-linux's `prlimit` started in front of
bwrap: RLIMIT_DATA (the memory one process may allocate), RLIMIT_NPROC (the processes of the
sandbox's user: its own user namespace counts them apart from the host's). RLIMIT_FSIZE (the
largest file written, in the checkout or anywhere) holds everywhere, as the per-file backstop
of `disk_mb` (the checkout's growth is the import rules'), and `tmp_mb` is the size of the
private /tmp (a tmpfs, which is memory). The kernel never applies RLIMIT_NPROC to root's
processes, and a sandbox of a root runner is root outside its namespace: without a pids
cgroup, `pids_max` does not hold for root and `runner validate` says so.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import attrs

from runner_core.run.config import SandboxConfig
from runner_shell.sandbox.cgroups import Bases, SandboxGroup, cgroup_bases

_MIB = 1024 * 1024


@attrs.frozen(slots=True)
class Limits:
    """What `prlimit` sets before bwrap starts: bytes and a process count, None for none."""

    prlimit: str  # the program
    memory_bytes: int
    pids: int
    file_bytes: int

    def prefix(
        self, group: SandboxGroup | None = None, peak_fd: int | None = None
    ) -> tuple[str, ...]:
        """The argv that starts the rest under these limits, in the sandbox's cgroup `group`
        when there is one (a shell writes its own pid into each of its groups, then becomes the
        rest); the memory is then the group's, not each process's. Where it is each process's,
        the subreaper (outside the group and the limits) reports the sandbox's peak to
        `peak_fd`, when given."""
        joined: tuple[str, ...] = ()
        if group is not None:
            procs = (str(directory / "cgroup.procs") for directory in group.directories)
            joined = (_SHELL, "-c", _JOIN, _SHELL, *procs, "--")
        held = group is not None and group.memory is not None
        memory = "unlimited" if held else self.memory_bytes
        reaper = () if held or peak_fd is None else subreaper_prefix(peak_fd)
        return (
            *reaper,
            *joined,
            self.prlimit,
            f"--data={memory}",
            f"--nproc={self.pids}",
            f"--fsize={self.file_bytes}",
            "--",
        )


def subreaper_prefix(peak_fd: int) -> tuple[str, ...]:
    """The argv of runner_shell.sandbox.subreaper reporting to `peak_fd`, before the rest; it
    dies with this process."""
    return (sys.executable, "-I", "-S", str(_SUBREAPER), str(peak_fd), str(os.getpid()))


def sandbox_limits(config: SandboxConfig) -> Limits | None:
    """The limits `config` asks for, or None where `prlimit` is missing (util-linux)."""
    program = shutil.which("prlimit") or (
        "/usr/bin/prlimit" if os.access("/usr/bin/prlimit", os.X_OK) else None
    )
    if program is None:
        return None
    return Limits(program, config.memory_mb * _MIB, config.pids_max, config.disk_mb * _MIB)


def tmp_bytes(config: SandboxConfig) -> int:
    """The private /tmp's size."""
    return config.tmp_mb * _MIB


def pids_hold() -> bool:
    """Whether RLIMIT_NPROC binds the sandbox's processes: never when the runner is root."""
    return os.getuid() != 0


def describe(limits: Limits | None, bases: Bases | None = None, root: bool | None = None) -> str:
    """What holds `pids_max` and `memory_mb`, for `runner validate`: `cgroup` (both in the
    sandbox's cgroup), `rlimit` (both resource limits), each named when they differ
    (`cgroup-pids,rlimit-memory`; `no-pids` for a root runner without a pids cgroup), `none`
    without `prlimit`. `bases` and `root` are this runner's unless given."""
    if limits is None:
        return "none"
    bases = cgroup_bases() if bases is None else bases
    nproc = pids_hold() if root is None else not root
    pids = "cgroup" if bases.pids is not None else "rlimit" if nproc else "no"
    memory = "cgroup" if bases.memory is not None else "rlimit"
    if pids == memory:
        return pids
    return f"{pids}-pids,{memory}-memory"


_SHELL = "/bin/sh"
_SUBREAPER = Path(__file__).with_name("subreaper.py")
# Joins each group named before `--`, then becomes what follows it.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
