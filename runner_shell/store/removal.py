"""Removing what an agent left, whatever its depth and modes, never through a symlink.

A tree is removed without recursion and with two directory descriptors open at most: each
directory met below the top is first moved up to the top (a rename within the tree), so the
walk never goes deeper than two levels however deep the agent nested it (a 3,000-deep chain
costs 3,000 renames, never a RecursionError or a path past PATH_MAX). A directory the agent
made unreadable, unwritable or unsearchable gets its owner's permissions back before it is
entered; a symlink is removed as an entry, never followed. Decides nothing about what to remove.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What a directory needs for its entries to be listed and removed.
_DIR_ACCESS = stat.S_IRWXU


def remove_tree(path: Path) -> None:
    """Remove `path` whatever it is (nothing when it is not there); a symlink at or in it is
    removed, never followed. OSError when something cannot be removed."""
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        remove_entry(parent, path.name)
    finally:
        os.close(parent)


def empty_directory(path: Path) -> None:
    """Remove everything in the directory `path` (made when missing), keeping it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    top = _open_fixing(None, str(path))
    try:
        _empty(top)
    finally:
        os.close(top)


def remove_entry(parent: int, name: str) -> None:
    """Remove entry `name` of the directory open as `parent`, a tree however deep."""
    try:
        facts = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(facts.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)
        return
    top = _open_fixing(parent, name)
    try:
        _empty(top)
    finally:
        os.close(top)
    _rmdir(parent, name)


def _empty(top: int) -> None:
    """Empty the directory open as `top`: its files go, each subdirectory is emptied in turn,
    its own subdirectories moved up into `top` first, then removed."""
    while True:
        directories = _remove_files(top)
        if not directories:
            return
        for name in directories:
            child = _open_fixing(top, name)
            try:
                for inner in _remove_files(child):
                    # Moving a directory to another parent rewrites its `..`: without root, it
                    # must be writable itself.
                    _give_back(child, inner)
                    moved_as = f".removing-{os.urandom(8).hex()}"
                    os.rename(inner, moved_as, src_dir_fd=child, dst_dir_fd=top)
            finally:
                os.close(child)
            _rmdir(top, name)


def _remove_files(directory: int) -> list[str]:
    """Unlink every entry of `directory` that is not a directory; the directories' names."""
    found: list[str] = []
    with os.scandir(directory) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        if is_dir:
            found.append(name)
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=directory)
    return sorted(found)


def _open_fixing(parent: int | None, name: str) -> int:
    """Directory `name` (of `parent`, else a path) opened without following a symlink, its
    owner's permissions given back first when it lacks them."""
    _give_back(parent, name)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _give_back(parent: int | None, name: str) -> None:
    """The directory `name`'s owner's permissions given back when it lacks them (never
    through a symlink: NotADirectoryError for anything but a directory)."""
    facts = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISDIR(facts.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", name)
    if facts.st_mode & _DIR_ACCESS != _DIR_ACCESS:
        _chmod_directory(parent, name, stat.S_IMODE(facts.st_mode) | _DIR_ACCESS)


def _chmod_directory(parent: int | None, name: str, mode: int) -> None:
    """chmod of the directory itself, reached through an O_PATH descriptor opened without
    following a symlink (a symlink swapped in meanwhile is never the one changed)."""
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=parent)
    try:
        os.chmod(f"/proc/self/fd/{fd}", mode)
    except OSError:
        with contextlib.suppress(OSError):  # without /proc: the name, just checked
            os.chmod(name, mode, dir_fd=parent)
    finally:
        os.close(fd)


def _rmdir(parent: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=parent)
