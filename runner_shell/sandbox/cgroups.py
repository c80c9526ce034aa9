"""The cgroup of one sandbox, where the runner can make one: its processes and its memory.

A sandbox's group holds `pids.max = pids_max` and its memory limit (`memory.max`, or v1's
`memory.limit_in_bytes`) of `memory_mb`, summed over every process in it. It is made in the
runner's own cgroup: in cgroup v2 one group with both controllers, when the runner's group
enables them for its children and the runner may write there; in cgroup v1 one group in each
hierarchy (pids, memory) whose runner's group is writable. The runner only reads the host's
settings, never changes them. bwrap joins the group before it starts (a shell writes its pid
into each `cgroup.procs`, then becomes the rest), so everything in the sandbox is counted.

`SandboxGroup.reached` says which limit the kernel enforced: `pids.events` counts the forks
refused at `pids.max`, `memory.events` (v1: `memory.oom_control`) the processes killed at the
memory limit. A group is removed only once the process that joined it has ended and nothing
is left in it, never while a process of another thread is about to join it; those of a runner
killed before it removed them go when the next runner makes its first group.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import attrs

CGROUP_ROOT = Path("/sys/fs/cgroup")
PIDS, MEMORY = "pids", "memory"
_numbers = itertools.count()
# Each directory this runner made, with whether the process that joins it has ended.
_made: dict[Path, Callable[[], bool]] = {}
_lock = threading.Lock()


@attrs.frozen(slots=True)
class SandboxGroup:
    """One sandbox's groups: the one holding `pids.max` and the one holding its memory limit
    (the same directory in cgroup v2), None where that controller is not the runner's."""

    pids: Path | None
    memory: Path | None
    v2: bool = False

    @property
    def directories(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(path for path in (self.pids, self.memory) if path))

    def reached(self) -> str | None:
        """`pids_max` when a fork was refused at `pids.max`, `memory_mb` when a process was
        killed at the memory limit, else None (a counter that cannot be read says nothing)."""
        if self.pids is not None and _counter(self.pids / "pids.events", "max") > 0:
            return "pids_max"
        if self.memory is not None:
            events = "memory.events" if self.v2 else "memory.oom_control"
            if _counter(self.memory / events, "oom_kill") > 0:
                return "memory_mb"
        return None


@attrs.frozen(slots=True)
class Bases:
    """Where new groups are made for each controller, None where none can be."""

    pids: Path | None = None
    memory: Path | None = None
    v2: bool = False


def sandbox_group(pids_max: int, memory_bytes: int) -> SandboxGroup | None:
    """A new group holding at most `pids_max` processes and `memory_bytes` of memory, or None
    where no controller is the runner's. The caller hands it to the process that joins it
    (`owned_by`), then leaves it (`give_up_unless_owned`). Groups whose process has ended are
    removed once empty, the rest when the runner exits."""
    bases = cgroup_bases()
    if bases.pids is None and bases.memory is None:
        return None
    _remove_left_behind(bases)
    _remove_empty()
    name = f"runner-sandbox-{os.getpid()}-{next(_numbers)}"
    pids = _made_group(bases.pids, name, (("pids.max", str(pids_max)),))
    memory_settings = _memory_settings(bases.v2, memory_bytes)
    if bases.v2 and pids is not None and bases.memory == bases.pids:
        memory = pids if _set(pids, memory_settings) else None
    else:
        memory = _made_group(bases.memory, name, memory_settings)
    if pids is None and memory is None:
        return None
    return SandboxGroup(pids, memory, bases.v2)


def _memory_settings(v2: bool, memory_bytes: int) -> tuple[tuple[str, str], ...]:
    """The memory limit, swap included where the host has swap (the first setting must hold,
    the others are tried)."""
    if v2:
        return (("memory.max", str(memory_bytes)), ("memory.swap.max", "0"))
    limit = str(memory_bytes)
    return (("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit))


def _made_group(base: Path | None, name: str, settings: tuple[tuple[str, str], ...]) -> Path | None:
    if base is None:
        return None
    group = base / name
    try:
        group.mkdir()
    except OSError:
        return None
    with _lock:
        _made[group] = _not_yet
    if not _set(group, settings):
        _forget(group)
        return None
    return group


def _set(group: Path, settings: tuple[tuple[str, str], ...]) -> bool:
    """Write each setting; False when the first cannot be written."""
    for index, (name, value) in enumerate(settings):
        try:
            (group / name).write_text(value, encoding="ascii")
        except OSError:
            if index == 0:
                return False
    return True


def owned_by(group: SandboxGroup, process: subprocess.Popen[bytes]) -> None:
    """`process` joins `group`: the group may go once the process has ended."""
    with _lock:
        for directory in group.directories:
            if directory in _made:
                _made[directory] = lambda: process.returncode is not None


def give_up_unless_owned(group: SandboxGroup) -> None:
    """Unless a process was started to join `group` (its start failed, or it ran and ended in
    the caller's block), the group is removed now when empty, else once it is."""
    with _lock:
        for directory in group.directories:
            if _made.get(directory) is _not_yet:
                _made[directory] = _ended
    _remove_empty()


def made_groups() -> tuple[Path, ...]:
    """The groups this runner made that are not removed yet."""
    with _lock:
        return tuple(_made)


@functools.cache
def cgroup_bases() -> Bases:
    """Where groups are made: the runner's own cgroup, in v2 when its children may use the
    controllers, else in each v1 hierarchy whose runner's group is writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return Bases()
    paths = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ("",):
            paths[name] = path.lstrip("/")
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        v2 = CGROUP_ROOT / paths.get("", "")
        delegated = _delegated(v2)
        return Bases(
            v2 if PIDS in delegated else None, v2 if MEMORY in delegated else None, v2=True
        )
    found = {}
    for controller in (PIDS, MEMORY):
        v1 = CGROUP_ROOT / controller / paths.get(controller, "")
        usable = controller in paths and (v1 / "cgroup.procs").exists()
        found[controller] = v1 if usable and os.access(v1, os.W_OK) else None
    return Bases(found[PIDS], found[MEMORY])


def _delegated(group: Path) -> frozenset[str]:
    """The controllers `group`'s children have, when the runner may make them (only read: the
    runner never changes the host's cgroup settings)."""
    try:
        enabled = (group / "cgroup.subtree_control").read_text(encoding="ascii").split()
    except OSError:
        return frozenset()
    return frozenset(enabled) if os.access(group, os.W_OK) else frozenset()


def _counter(path: Path, name: str) -> int:
    """The value of `name` in a `key value` file of the kernel's, 0 when it cannot be read."""
    try:
        text = path.read_text(encoding="ascii")
    except OSError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def _not_yet() -> bool:
    return False


def _ended() -> bool:
    return True


def _forget(group: Path) -> None:
    with contextlib.suppress(OSError):
        group.rmdir()
    with _lock:
        _made.pop(group, None)


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


@functools.cache
def _remove_left_behind(bases: Bases) -> None:
    """Once per runner: remove the empty groups of runners that ended without removing theirs
    (killed with SIGKILL), named `runner-sandbox-<pid>-<n>` for a pid that no longer runs."""
    for base in dict.fromkeys(path for path in (bases.pids, bases.memory) if path):
        with contextlib.suppress(OSError):
            for group in base.glob("runner-sandbox-*-*"):
                pid = group.name.split("-")[2]
                if pid.isdigit() and int(pid) != os.getpid() and not _runs(int(pid)):
                    with contextlib.suppress(OSError):
                        group.rmdir()


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@atexit.register
def _remove_all() -> None:
    with _lock:
        groups = list(_made)
    for group in groups:
        with contextlib.suppress(OSError):
            group.rmdir()
