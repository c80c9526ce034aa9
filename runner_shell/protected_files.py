"""Runner files an agent's daemon must not change: read at step start, put back before the commit.

Which files, and how GOAL.md's id is put back, is runner_core.containment's; this reads and
writes them (never through a symlink, never blocking on a FIFO) and decides nothing.
"""

from __future__ import annotations

from pathlib import Path

from runner_core.containment import PROTECTED_FILES, restored_goal
from runner_shell.files import atomic_write_bytes, atomic_write_text, read_bytes_capped
from runner_shell.layout import RunnerPaths

# The protected files are small: config, .gitignore and three JSON schemas.
PROTECTED_MAX_BYTES = 16 * 1024 * 1024
# GOAL.md is the user's; only its id is restored, so its text is read up to this size.
GOAL_MAX_BYTES = 64 * 1024 * 1024

Snapshot = tuple[tuple[Path, bytes], ...]


def snapshot(paths: RunnerPaths) -> Snapshot:
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


def restore(paths: RunnerPaths, taken: Snapshot, run_id: str) -> None:
    """Put back every protected file that differs from `taken`, and GOAL.md's id."""
    for path, data in taken:
        try:
            now: bytes | None = read_bytes_capped(path, PROTECTED_MAX_BYTES)
        except OSError:
            now = None
        if now != data:
            if path.is_symlink() or path.is_dir():
                _remove(path)
            atomic_write_bytes(path, data)
    try:
        goal = read_bytes_capped(paths.goal, GOAL_MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return  # not the runner's to rewrite: the next step refuses it in one line
    text = restored_goal(goal, run_id)
    if text is not None:
        atomic_write_text(paths.goal, text)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        path.rmdir()
