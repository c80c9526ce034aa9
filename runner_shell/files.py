"""Atomic writes and bounded reads: how every runner-owned file reaches the disk.

A state file is either its old bytes or its new bytes, never a torn mix: write to a temp
file in the same directory, fsync, rename, fsync the directory. Decides nothing about content.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; runner's files get the mode any other new file would get.
_FILE_MODE = 0o666 & ~_current_umask()
# Snapshots of the iteration log: never edited in place, possibly shared by hard links.
READ_ONLY = 0o444


def _mode_for(path: Path) -> int:
    """A replaced file keeps its mode; a new one gets the umask's."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return _FILE_MODE


class PendingFile:
    """A temporary file beside `path` that replaces it only when committed: the one atomic write.

    Commit is fsync, rename, fsync of the directory; the file keeps the mode `path` had, or
    gets `mode`, or the umask's for a new file.
    """

    def __init__(self, path: Path, mode: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        file_mode = _mode_for(path) if mode is None else mode
        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        self.path = path
        self.temp_path = Path(temp_name)
        self.file: BinaryIO = os.fdopen(fd, "wb")
        try:
            os.fchmod(fd, file_mode)
        except BaseException:
            self.discard()
            raise

    def commit(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.temp_path, self.path)
        _fsync_directory(self.path.parent)

    def discard(self) -> None:
        self.file.close()
        self.temp_path.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """`path` holds either its old bytes or `data`, never a torn mix."""
    pending = PendingFile(path, mode)
    try:
        pending.file.write(data)
        pending.commit()
    except BaseException:
        pending.discard()
        raise


# Text is encoded this many characters at a time: a 100 MB tree never exists twice in memory.
_TEXT_SLICE_CHARS = 1 << 20


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """`atomic_write_bytes` of `text` as UTF-8, encoded slice by slice as it is written."""
    pending = PendingFile(path, mode)
    try:
        for start in range(0, len(text), _TEXT_SLICE_CHARS):
            pending.file.write(text[start : start + _TEXT_SLICE_CHARS].encode("utf-8"))
        pending.commit()
    except BaseException:
        pending.discard()
        raise


def atomic_link(source: Path, target: Path) -> bool:
    """Make `target` a hard link to `source`, atomically; False when `source` is gone."""
    temp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")
    try:
        os.link(source, temp)
    except FileNotFoundError:
        return False
    try:
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)
    return True


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
