"""The cgroups of a root runner's sandboxes (runner_shell/sandbox/cgroups.py): a group goes
once the process that joined it has ended, never while a process of another thread is about to
join it (parallel slots and a worker's jobs make groups from several threads at once)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

from runner_shell.sandbox import cgroups
from runner_shell.sandbox.cgroups import (
    SandboxGroup,
    cgroup_bases,
    give_up_unless_owned,
    owned_by,
    sandbox_group,
)

pytestmark = pytest.mark.skipif(
    os.getuid() != 0 or cgroup_bases().pids is None, reason="root with a pids cgroup"
)

MIB = 1024 * 1024


def pids_group(pids_max: int) -> SandboxGroup | None:
    return sandbox_group(pids_max, 256 * MIB)


def exists(group: SandboxGroup) -> bool:
    return all(directory.is_dir() for directory in group.directories)


def gone(group: SandboxGroup) -> bool:
    return not any(directory.exists() for directory in group.directories)


def test_a_group_not_yet_joined_outlives_the_next_group_made() -> None:
    first = pids_group(16)
    second = pids_group(16)  # what removed the first before its shell could join it

    assert first is not None and second is not None
    assert exists(first) and exists(second)
    give_up_unless_owned(first)
    give_up_unless_owned(second)
    assert gone(first) and gone(second)


def test_a_group_goes_once_its_process_has_ended_and_not_before() -> None:
    group = pids_group(16)
    assert group is not None
    joins = " && ".join(f'echo $$ > "{path}/cgroup.procs"' for path in group.directories)
    join = f'{joins} && exec "$0" -c "import sys; sys.stdin.read()"'
    process = subprocess.Popen(["/bin/sh", "-c", join, sys.executable], stdin=subprocess.PIPE)
    owned_by(group, process)
    give_up_unless_owned(group)  # the launch's block ends with the process still running

    later = pids_group(16)
    assert exists(group)
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert later is not None
    give_up_unless_owned(later)
    assert gone(group) and gone(later)


def test_the_empty_groups_of_a_runner_killed_before_removing_them_go_with_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    bases = cgroup_bases()
    left = [base / f"runner-sandbox-{ended.pid}-0" for base in (bases.pids, bases.memory) if base]
    running = [base / f"runner-sandbox-{os.getppid()}-0" for base in (bases.pids,) if base]
    for path in (*left, *running):
        path.mkdir()
    try:
        monkeypatch.setattr(
            cgroups, "_remove_left_behind", functools.cache(cgroups._remove_left_behind.__wrapped__)
        )
        group = pids_group(16)
        assert group is not None
        give_up_unless_owned(group)
        assert not any(path.exists() for path in left)
        assert all(path.exists() for path in running)  # its runner still runs
    finally:
        for path in (*left, *running):
            if path.exists():
                path.rmdir()
