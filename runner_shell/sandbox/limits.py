"""The limits a sandboxed process runs under: its memory, its processes, its files, its /tmp.

`[sandbox] memory_mb`, `pids_max`, `disk_mb` and `tmp_mb` (docs/sandbox.md). They are held by
resource limits that bubblewrap and everything it starts inherit, set by util-linux's `prlimit`
started in front of bwrap: RLIMIT_DATA (the memory a process may allocate), RLIMIT_NPROC (the
processes of the sandbox's user: its own user namespace counts them apart from the host's),
RLIMIT_FSIZE (the largest file written, in the checkout or anywhere), and by the size of the
private /tmp (a tmpfs is memory). The kernel never applies RLIMIT_NPROC to root's processes,
and a sandbox of a root runner is root outside its namespace: there `pids_max` does not hold,
and `runner validate` says so.
"""

from __future__ import annotations

import os
import shutil

import attrs

from runner_core.run.config import SandboxConfig

_MIB = 1024 * 1024


@attrs.frozen(slots=True)
class Limits:
    """What `prlimit` sets before bwrap starts: bytes and a process count, None for none."""

    prlimit: str  # the program
    memory_bytes: int
    pids: int
    file_bytes: int

    def prefix(self) -> tuple[str, ...]:
        """The argv that starts the rest under these limits."""
        return (
            self.prlimit,
            f"--data={self.memory_bytes}",
            f"--nproc={self.pids}",
            f"--fsize={self.file_bytes}",
            "--",
        )


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


def describe(limits: Limits | None) -> str:
    """What holds the limits, for `runner validate`: `rlimit`, `rlimit,no-pids` (root), `none`."""
    if limits is None:
        return "none"
    return "rlimit" if pids_hold() else "rlimit,no-pids"
