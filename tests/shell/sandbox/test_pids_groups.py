"""The cgroups of a root runner's sandboxes (runner_shell/sandbox/cgroups.py): a group goes
once the process that joined it has ended, never while a process of another thread is about to
join it (parallel slots and a worker's jobs make groups from several threads at once)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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
