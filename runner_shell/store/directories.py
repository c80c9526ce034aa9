"""Reaching a directory below the repository's top one component at a time, never through a
symlink: where every runner write starts (runner_shell.store.files).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path


class UnsafePath(OSError):
    """A directory on the way to a runner file is a symlink or not a directory: never followed."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            errno.ELOOP,
            "is a symlink or not a directory; the runner never writes through it (remove it)",
            str(path),
        )


def _repository_top(directory: Path) -> Path:
    """The outermost ancestor holding `.git`, below which no symlink is followed; outside a
    repository, the nearest ancestor that exists.

    Outermost first: a `.git` lower down may have been planted by the agent, behind a symlink
    it made (`.runner/iterations/<run>` -> a directory holding `.git`), and trusting it would
    follow that symlink. The repository's own `.git` is always at or above any planted one.
    """
    text = str(directory)
    # A copy, taken at once: a job's thread may add a top meanwhile.
    for top in sorted((top for top in tuple(_KNOWN_TOPS) if _is_within(text, top)), key=len):
        if os.path.lexists(os.path.join(top, ".git")):
            return Path(top)
    candidates = (directory, *directory.parents)
    for candidate in reversed(candidates):
        if os.path.lexists(candidate / ".git"):
            if len(_KNOWN_TOPS) >= _KNOWN_TOPS_KEPT:
                _KNOWN_TOPS.clear()
            _KNOWN_TOPS.add(str(candidate))
            return candidate
    return next(candidate for candidate in candidates if candidate.is_dir())


# The tops found so far. What lies above one is outside the repository, beyond an agent's
# reach, and was looked at when it was found: a write below it starts there once its `.git` is
# seen still in place, instead of looking at every ancestor from `/` again.
_KNOWN_TOPS: set[str] = set()
_KNOWN_TOPS_KEPT = 64


def _is_within(text: str, top: str) -> bool:
    return text == top or text.startswith(top if top.endswith("/") else top + "/")


def open_directory(directory: Path) -> int:
    """An fd of `directory`, made as needed, reached from the repository's top one component
    at a time without following a symlink (O_NOFOLLOW): a write never leaves the repository."""
    directory = Path(os.path.abspath(directory))
    top = _repository_top(directory)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    reached = top
    try:
        for part in directory.relative_to(top).parts:
            reached = reached / part
            child = _open_child(fd, part, reached)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(fd: int, part: str, reached: Path) -> int:
    """Directory `part` of `fd` opened without following a symlink, made first if missing."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            return os.open(part, flags, dir_fd=fd)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
                os.mkdir(part, 0o777, dir_fd=fd)
            return os.open(part, flags, dir_fd=fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(reached) from None
        raise


def make_directory(directory: Path) -> None:
    """`directory` and its missing parents, none of them reached through a symlink."""
    os.close(open_directory(directory))


def open_existing_directory(directory: Path) -> int | None:
    """`open_directory` that makes nothing: None when `directory`, or a directory on the way
    to it, is missing, a symlink or not a directory."""
    directory = Path(os.path.abspath(directory))
    top = _repository_top(directory)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    for part in directory.relative_to(top).parts:
        try:
            child = os.open(part, flags, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd
