"""git in a slot, from the runner's own index beside it, and the removal of what git lists.

The slot's `.git` is the agent's to rig; the runner's git commands run with its own index
(`<n>.index`, beside the slot) and never log the reset's move of the branch. What they list is
removed at any depth, never through a symlink.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from runner_shell.git.hardened import GitError, run_git
from runner_shell.store.removal import remove_entry

# Deadline of each git command of a reset.
SLOT_GIT_TIMEOUT_SECS = 600.0


class SlotError(Exception):
    """A slot could not be made or reset; str() is one line naming the slot and why."""


def index_file(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: the index of the slot's last reset, whose
    stat data tell which files anyone touched since (a changed file's ctime moves, whatever
    else it keeps)."""
    return slot.parent / f"{slot.name}.index"


def slot_git(slot: Path, *args: str, ok_codes: tuple[int, ...] = (0,)) -> bytes:
    env = dict(os.environ, GIT_DIR=str(slot / ".git"), GIT_WORK_TREE=str(slot))
    env["GIT_INDEX_FILE"] = str(index_file(slot))
    # The reset's own move of the branch is logged nowhere: three directories fewer to make
    # now and to delete at the next reset (the agent's git keeps its reflog as configured).
    env.update(
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="core.logAllRefUpdates",
        GIT_CONFIG_VALUE_0="false",
    )
    for name in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        env.pop(name, None)
    result = run_git(args, slot, env=env, timeout=SLOT_GIT_TIMEOUT_SECS)
    if result.returncode not in ok_codes:
        raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return result.stdout


def remove_listed(slot: Path, listed: bytes, kept: Collection[str] = ()) -> None:
    """Remove each path of git's NUL-separated `listed` (a wholly untracked directory is named
    once, unentered) but those under a top-level name of `kept`: any depth, never through a
    symlink (`git clean` walks a deep tree for long, and fails on one past PATH_MAX)."""
    for name in listed.split(b"\0"):
        relative = os.fsdecode(name).rstrip("/")
        if not relative or relative.split("/")[0] in kept:
            continue
        parent_part, _, entry = relative.rpartition("/")
        try:
            parent = open_below(slot, parent_part)
        except OSError:
            continue  # its directory is gone or was swapped for a symlink: nothing to follow
        try:
            remove_entry(parent, entry)
        finally:
            os.close(parent)


def open_below(slot: Path, relative: str) -> int:
    """A descriptor of the slot's directory `relative`, no component followed as a symlink."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(slot, flags)
    for part in relative.split("/") if relative else ():
        try:
            child = os.open(part, flags, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd
