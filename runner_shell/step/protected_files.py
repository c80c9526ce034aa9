"""Runner files an agent's daemon must not change: read at step start, put back before the commit
and checked untouched after it was staged (`ProtectedStaging`).

Which files, and how GOAL.md's id is put back, is runner_core.iteration.preconditions's; this
reads and writes them (never through a symlink, never blocking on a FIFO) and decides nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from runner_core.iteration.preconditions import PROTECTED_FILES, restored_goal
from runner_shell.store.files import (
    atomic_write_bytes,
    atomic_write_text,
    read_bytes_capped,
    remove_empty_directory,
)
from runner_shell.store.layout import Places

# The protected files are small: config, .gitignore and three JSON schemas.
PROTECTED_MAX_BYTES = 16 * 1024 * 1024
# GOAL.md is the user's; only its id is restored, so its text is read up to this size.
GOAL_MAX_BYTES = 64 * 1024 * 1024

Snapshot = tuple[tuple[Path, bytes], ...]


def snapshot(paths: Places) -> Snapshot:
    """The protected files' bytes as they are at step start (the committed state: the step
    starts from a clean work tree); a file that is not there is not protected."""
    taken = []
    for name in PROTECTED_FILES:
        path = paths.runner_dir / name
        try:
            taken.append((path, read_bytes_capped(path, PROTECTED_MAX_BYTES)))
        except OSError:
            continue
    return tuple(taken)


def restore(paths: Places, taken: Snapshot, run_id: str) -> None:
    """Put back every protected file that differs from `taken`, and GOAL.md's id."""
    for path, data in taken:
        try:
            now: bytes | None = read_bytes_capped(path, PROTECTED_MAX_BYTES)
        except OSError:
            now = None
        if now != data:
            remove_empty_directory(path)  # the write replaces a file or a symlink, not this
            atomic_write_bytes(path, data)
    try:
        goal = read_bytes_capped(paths.goal, GOAL_MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return  # not the runner's to rewrite: the next step refuses it in one line
    text = restored_goal(goal, run_id)
    if text is not None:
        atomic_write_text(paths.goal, text)


def _as_restored(paths: Places, taken: Snapshot, run_id: str) -> bool:
    """Whether every protected file holds its snapshot's bytes and GOAL.md its id."""
    for path, data in taken:
        try:
            if read_bytes_capped(path, PROTECTED_MAX_BYTES) != data:
                return False
        except OSError:
            return False
    try:
        goal = read_bytes_capped(paths.goal, GOAL_MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # restore leaves it alone too: the next step refuses it in one line
    return restored_goal(goal, run_id) is None


Signature = tuple[int, int, int, int, int] | None


def _signature(path: Path) -> Signature:
    """What any write to `path` changes: inode, mode, size, mtime and ctime (None: no file)."""
    try:
        facts = os.lstat(path)
    except OSError:
        return None
    return facts.st_ino, facts.st_mode, facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns


@attrs.define
class ProtectedStaging:
    """The commit's StagingGuard (runner_shell.git.repo): an agent's daemon may rewrite protected
    files at any moment, also between their restore and `git add`. Before each staging they
    are put back, their signatures taken and their bytes checked; after it, a changed
    signature or byte means the index may hold the daemon's bytes, and the commit stages
    again. Left open: a daemon writing other bytes of the same size and putting the original
    back, both within one tick of the file system's clock, between the check and `git add`."""

    paths: Places
    taken: Snapshot
    run_id: str
    signatures: tuple[Signature, ...] = ()

    def _watched(self) -> tuple[Path, ...]:
        return (*(path for path, _ in self.taken), self.paths.goal)

    def before_staging(self) -> None:
        restore(self.paths, self.taken, self.run_id)
        # Taken before the bytes are checked: a write after the check changes a signature.
        self.signatures = tuple(_signature(path) for path in self._watched())
        # Checked here as well as after `git add`: other bytes written before the signature
        # and undone after the add within the same clock tick leave both the signature and
        # the bytes as restored, yet the index holds the other bytes.
        if not _as_restored(self.paths, self.taken, self.run_id):
            self.signatures = ()  # changed while being put back: stage again

    def untouched_since(self) -> bool:
        # Signatures catch a write and its undoing; the bytes, a write within the clock's tick.
        now = tuple(_signature(path) for path in self._watched())
        if not self.signatures or now != self.signatures:
            return False
        return _as_restored(self.paths, self.taken, self.run_id)
