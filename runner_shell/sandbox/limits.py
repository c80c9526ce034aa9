"""The limits a sandboxed process runs under: its memory, its processes, its files, its /tmp.

`[sandbox] memory_mb`, `pids_max`, `disk_mb` and `tmp_mb` (docs/sandbox.md). They are held by
resource limits that bubblewrap and everything it starts inherit, set by util-linux's `prlimit`
started in front of bwrap: RLIMIT_DATA (the memory a process may allocate), RLIMIT_NPROC (the
processes of the sandbox's user: its own user namespace counts them apart from the host's),
RLIMIT_FSIZE (the largest file written, in the checkout or anywhere), and by the size of the
private /tmp (a tmpfs is memory). The kernel never applies RLIMIT_NPROC to root's processes,
and a sandbox of a root runner is root outside its namespace: there `pids_max` is held by a
cgroup of the pids controller made for each sandbox, where the runner can make one (cgroup v2
with the controller enabled for its group, or v1's pids hierarchy), which bwrap joins before it
starts; where it cannot, `pids_max` does not hold for root and `runner validate` says so.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

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

    def prefix(self, group: Path | None = None) -> tuple[str, ...]:
        """The argv that starts the rest under these limits, in the pids cgroup `group` when
        there is one (a shell writes its own pid into it, then becomes the rest)."""
        joined = () if group is None else (_SHELL, "-c", _JOIN, str(group / "cgroup.procs"))
        return (
            *joined,
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
    """What holds the limits, for `runner validate`: `rlimit`, `rlimit,cgroup-pids` (root, with
    a pids cgroup), `rlimit,no-pids` (root without one), `none`."""
    if limits is None:
        return "none"
    if pids_hold():
        return "rlimit"
    return "rlimit,cgroup-pids" if pids_base() is not None else "rlimit,no-pids"


CGROUP_ROOT = Path("/sys/fs/cgroup")
_SHELL = "/bin/sh"
_JOIN = 'echo $$ > "$0" && exec "$@"'
_numbers = itertools.count()
# Each group this runner made, with whether the process that joins it has ended: a group is
# removed once its process has ended and nothing is left in it, never while a process about to
# join it (another thread's) has not started yet.
_made: dict[Path, Callable[[], bool]] = {}
_lock = threading.Lock()


def pids_group(pids_max: int) -> Path | None:
    """A new pids cgroup holding at most `pids_max` processes, for one sandbox of a root runner;
    None where RLIMIT_NPROC holds already or no group can be made. The caller hands it to the
    process that joins it (`owned_by`), then leaves it (`give_up_unless_owned`).
    Groups whose process has ended are removed once empty, the rest when the runner exits."""
    if pids_hold():
        return None
    base = pids_base()
    if base is None:
        return None
    _remove_empty()
    group = base / f"runner-sandbox-{os.getpid()}-{next(_numbers)}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(pids_max), encoding="ascii")
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    with _lock:
        _made[group] = _not_yet
    return group


def owned_by(group: Path, process: subprocess.Popen[bytes]) -> None:
    """`process` joins `group`: the group may go once the process has ended."""
    with _lock:
        if group in _made:
            _made[group] = lambda: process.returncode is not None


def give_up_unless_owned(group: Path) -> None:
    """Unless a process was started to join `group` (its start failed, or it ran and ended in
    the caller's block), the group is removed now when empty, else once it is."""
    with _lock:
        if _made.get(group) is _not_yet:
            _made[group] = _ended
    _remove_empty()


def pids_groups() -> tuple[Path, ...]:
    """The pids cgroups this runner made that are not removed yet."""
    with _lock:
        return tuple(_made)


@functools.cache
def pids_base() -> Path | None:
    """The cgroup new pids groups are made in: the runner's own, in v2 when its children may use
    the pids controller, else in v1's pids hierarchy; None when neither is writable here."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    paths = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ("",):
            paths[name] = path.lstrip("/")
    v2 = CGROUP_ROOT / paths.get("", "")
    if (CGROUP_ROOT / "cgroup.controllers").exists() and _delegates_pids(v2):
        return v2
    v1 = CGROUP_ROOT / "pids" / paths.get("pids", "")
    if "pids" in paths and (v1 / "cgroup.procs").exists() and os.access(v1, os.W_OK):
        return v1
    return None


def _delegates_pids(group: Path) -> bool:
    """Whether `group`'s children have the pids controller and the runner may make them (only
    read: the runner never changes the host's cgroup settings)."""
    try:
        enabled = (group / "cgroup.subtree_control").read_text(encoding="ascii").split()
    except OSError:
        return False
    return "pids" in enabled and os.access(group, os.W_OK)


def _not_yet() -> bool:
    return False


def _ended() -> bool:
    return True


def _remove_empty() -> None:
    """Remove the groups whose process has ended and that nothing is left in (a process its
    sandbox left running keeps its group until it ends)."""
    with _lock:
        ended = [group for group, has_ended in _made.items() if has_ended()]
    for group in ended:
        with contextlib.suppress(OSError):
            group.rmdir()
            with _lock:
                _made.pop(group, None)


@atexit.register
def _remove_all() -> None:
    with _lock:
        groups = list(_made)
    for group in groups:
        with contextlib.suppress(OSError):
            group.rmdir()
