"""Atomic writes and bounded reads: how every runner-owned file reaches the disk.

A state file is either its old bytes or its new bytes, never a torn mix: write to a temp
file in the same directory, fsync, rename, fsync the directory. Decides nothing about content.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; runner's files get the mode any other new file would get.
_FILE_MODE = 0o666 & ~_current_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry is.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class FileTooLarge(OSError):
    def __init__(self, path: Path, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size} bytes (limit {limit})")
        self.size = size
        self.limit = limit


def read_bytes_capped(path: Path, limit: int) -> bytes:
    """The file's bytes, refusing (FileTooLarge) to load more than `limit` into memory."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise FileTooLarge(path, size, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(path, len(data), limit)
    return data


def read_text_head(path: Path, limit: int) -> str:
    """At most the first `limit` bytes of a text file, decoded leniently."""
    with path.open("rb") as handle:
        return handle.read(limit).decode("utf-8", errors="replace")
