"""Atomic writes and bounded reads: how every runner-owned file reaches the disk.

A state file is either its old bytes or its new bytes, never a torn mix: write to a temp
file in the same directory, fsync, rename, fsync the directory. Decides nothing about content.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from runner_shell.store.directories import UnsafePath as UnsafePath
from runner_shell.store.directories import make_directory as make_directory
from runner_shell.store.directories import open_directory as open_directory


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; runner's files get the mode any other new file would get.
_FILE_MODE = 0o666 & ~_current_umask()
# Snapshots of the iteration log: never edited in place, possibly shared by hard links.
READ_ONLY = 0o444


def _mode_for(directory_fd: int, name: str) -> int:
    """A replaced regular file keeps its mode; a new one, or one replacing a symlink (0777),
    FIFO or device, gets the umask's."""
    try:
        facts = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    except OSError:
        return _FILE_MODE
    return stat.S_IMODE(facts.st_mode) if stat.S_ISREG(facts.st_mode) else _FILE_MODE


def _named(error: OSError, path: Path) -> OSError:
    """`error` naming `path` (a full disk says which file it could not write)."""
    if error.filename is not None or error.errno is None:
        return error
    return OSError(error.errno, error.strerror, str(path))


class PendingFile:
    """A temporary file beside `path` that replaces it only when committed: the one atomic write.

    Commit is fsync, rename, fsync of the directory (a file that is not `durable`, remade
    whenever it is needed, skips the fsyncs: readers still see one or the other, whole); the
    file keeps the mode `path` had, or gets `mode`, or the umask's for a new file. The
    directory is reached without following a symlink, and the temporary file is never a
    symlink's target.
    """

    def __init__(self, path: Path, mode: int | None = None) -> None:
        self.path = path
        self._dir_fd = open_directory(path.parent)
        try:
            file_mode = _mode_for(self._dir_fd, path.name) if mode is None else mode
            self._temp_name = f".{path.name}.{os.urandom(6).hex()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(self._temp_name, flags, 0o600, dir_fd=self._dir_fd)
        except OSError as error:
            os.close(self._dir_fd)
            raise _named(error, path) from None
        self.file: BinaryIO = os.fdopen(fd, "wb")
        try:
            os.fchmod(fd, file_mode)
        except BaseException:
            self.discard()
            raise

    def write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as error:
            raise _named(error, self.path) from None

    def commit(self, durable: bool = True, sync_directory: bool = True) -> None:
        """Replace `path`; without `sync_directory` the rename is on disk only once the caller
        has synced the directory (`sync_directories`: one fsync for several files)."""
        try:
            self.file.flush()
            if durable:
                os.fsync(self.file.fileno())
            self.file.close()
            os.replace(
                self._temp_name, self.path.name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd
            )
        except OSError as error:
            raise _named(error, self.path) from None
        if durable and sync_directory:
            with contextlib.suppress(OSError):  # the rename is durable only once the entry is
                os.fsync(self._dir_fd)
        os.close(self._dir_fd)
        self._dir_fd = -1

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
        if self._dir_fd >= 0:
            with contextlib.suppress(OSError):
                os.unlink(self._temp_name, dir_fd=self._dir_fd)
            os.close(self._dir_fd)
            self._dir_fd = -1


def atomic_write_bytes(
    path: Path,
    data: bytes,
    mode: int | None = None,
    *,
    durable: bool = True,
    sync_directory: bool = True,
) -> None:
    """`path` holds either its old bytes or `data`, never a torn mix; on disk before this
    returns unless not `durable` (a file remade whenever it is needed: see PendingFile) or not
    `sync_directory` (the caller syncs its directory: `sync_directories`)."""
    _write_pieces(path, (data,), mode, durable, sync_directory)


def _write_pieces(
    path: Path, pieces: Iterable[bytes], mode: int | None, durable: bool, sync_directory: bool
) -> None:
    pending = PendingFile(path, mode)
    try:
        for piece in pieces:
            pending.write(piece)
        pending.commit(durable, sync_directory)
    except BaseException:
        pending.discard()
        raise


# Text is encoded this many characters at a time: a 100 MB tree never exists twice in memory.
_TEXT_SLICE_CHARS = 1 << 20
# Files are hashed this many bytes at a time.
_HASH_CHUNK_BYTES = 1 << 20


def encoded_slices(text: str) -> Iterator[bytes]:
    """`text` as UTF-8, a slice at a time: a large text is never held twice, as str and bytes."""
    for start in range(0, len(text), _TEXT_SLICE_CHARS):
        yield text[start : start + _TEXT_SLICE_CHARS].encode("utf-8")


def atomic_write_text(
    path: Path,
    text: str,
    mode: int | None = None,
    *,
    durable: bool = True,
    sync_directory: bool = True,
) -> None:
    """`atomic_write_bytes` of `text` as UTF-8, encoded slice by slice as it is written."""
    _write_pieces(path, encoded_slices(text), mode, durable, sync_directory)


def sync_directories(directories: Iterable[Path]) -> None:
    """Each directory's entries on disk (renames into it, files made in it), once each."""
    for directory in dict.fromkeys(directories):
        fd = open_directory(directory)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def rename_within(directory: Path, source: str, target: str) -> bool:
    """Rename `source` to `target` inside `directory`, reached as every write reaches its
    directory (never through a symlink); False when `source` is not there."""
    fd = open_directory(directory)
    try:
        os.replace(source, target, src_dir_fd=fd, dst_dir_fd=fd)
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)
    return True


def remove_empty_directory(path: Path) -> None:
    """Remove `path` when it is an empty directory; anything else there stays (rmdir never
    follows a symlink). Its parent is reached as every write's directory is."""
    fd = open_directory(path.parent)
    try:
        os.rmdir(path.name, dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError):
        pass
    finally:
        os.close(fd)


def link_if_sha256(source: Path, target: Path, sha256: str, mode: int | None = None) -> bool:
    """Make `target` a hard link to `source`, atomically, when `source` is a regular file whose
    bytes have the SHA-256 `sha256`; False, and nothing linked, when it is gone, is anything but
    a regular file, or holds other bytes (an agent rewrote or replaced it).

    The file hashed is the file linked: the link is made from the open descriptor, never from the
    name again, and a change while it was read (size or mtime) is a mismatch. `mode` (e.g.
    READ_ONLY) is set on the file when it differs. Without /proc the link is not made.
    """
    try:
        handle = open_regular(source)
    except OSError:
        return False
    with handle:
        fd = handle.fileno()
        if _digest(handle) != sha256:
            return False
        if mode is not None and stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            try:
                os.fchmod(fd, mode)
            except OSError:
                return False
        directory = open_directory(target.parent)
        try:
            temp = f".{target.name}.{os.urandom(6).hex()}.tmp"
            try:  # linkat(AT_SYMLINK_FOLLOW) of the descriptor's magic link
                os.link(f"/proc/self/fd/{fd}", temp, dst_dir_fd=directory, follow_symlinks=True)
            except OSError:
                return False
            try:
                os.replace(temp, target.name, src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=directory)
                raise
            with contextlib.suppress(OSError):  # the rename is durable only once the entry is
                os.fsync(directory)
        finally:
            os.close(directory)
    return True


def sha256_of_regular(path: Path) -> str | None:
    """The SHA-256 of a regular file's bytes; None when it is missing, anything but a regular
    file, unreadable, or changed while it was read."""
    try:
        with open_regular(path) as handle:
            return _digest(handle)
    except OSError:
        return None


def _digest(handle: BinaryIO) -> str | None:
    """The open file's SHA-256, read in slices; None when its size or mtime moved meanwhile."""
    import hashlib  # here: the commands that only read files never hash one

    before = os.fstat(handle.fileno())
    digest = hashlib.sha256()
    while chunk := handle.read(_HASH_CHUNK_BYTES):
        digest.update(chunk)
    after = os.fstat(handle.fileno())
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        return None
    return digest.hexdigest()


class FileTooLarge(OSError):
    def __init__(self, path: Path, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size} bytes (limit {limit})")
        self.size = size
        self.limit = limit


class NotRegularFile(OSError):
    """A file the runner reads or appends to that is a FIFO, device, directory or symlink:
    never opened."""

    def __init__(self, path: Path, kind: str, *, writing: bool = False) -> None:
        if writing:
            message = f"is {kind}; the runner never writes through it (remove it)"
        else:
            message = f"is {kind}, not a regular file; the runner does not read it"
        super().__init__(errno.EINVAL, message, str(path))
        self.kind = kind


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, refusing (NotRegularFile) anything but a regular file.

    The final component is not followed (O_NOFOLLOW) and a FIFO never blocks the open.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotRegularFile(path, "a symlink") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(path, _kind(mode))
    return os.fdopen(fd, "rb")


def read_bytes_capped(path: Path, limit: int) -> bytes:
    """The regular file's bytes, refusing (FileTooLarge) to load more than `limit` into memory."""
    with open_regular(path) as handle:
        fd = handle.fileno()
        return _read_capped(fd, path, limit, os.fstat(fd).st_size)


def read_bytes_capped_at(directory_fd: int, name: str, limit: int) -> bytes:
    """`read_bytes_capped` of the entry `name` of the directory open as `directory_fd`: a
    walk that holds each directory open reads its files without resolving a path again."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=directory_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotRegularFile(Path(name), "a symlink") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(Path(name), _kind(status.st_mode))
        return _read_capped(fd, name, limit, status.st_size)
    finally:
        os.close(fd)


def _read_capped(fd: int, path: Path | str, limit: int, size: int) -> bytes:
    """What is left of the open file of `size` bytes (by fstat), at most `limit` bytes
    (FileTooLarge beyond, naming `path`). Asking for `size` bytes, plus one to see a file that
    grew since, allocates what the file holds rather than `limit` bytes: a reader of many small
    files pays for their bytes only."""
    if size > limit:
        raise FileTooLarge(Path(path), size, limit)
    chunk = os.read(fd, size + 1)
    chunks, read = [chunk], len(chunk)
    # Having read the `size` bytes fstat gave is the end: no second call to learn it. A file
    # that grew since, or says 0 and has more (/proc), is read on to its end or the limit.
    while chunk and read <= limit and not 0 < read == size:
        chunk = os.read(fd, limit + 1 - read)
        chunks.append(chunk)
        read += len(chunk)
    if read > limit:
        raise FileTooLarge(Path(path), read, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_text_head(path: Path, limit: int) -> str:
    """At most the first `limit` bytes of a regular text file, decoded leniently."""
    with open_regular(path) as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


def open_append(path: Path) -> int:
    """A descriptor appending to the regular file `path`, made as needed (mode 0644 less the
    umask). Its directory is reached as `open_directory` reaches it; a symlink, FIFO, directory
    or hard link (a second name of a file elsewhere) at `path` is refused (NotRegularFile), and
    a FIFO never blocks the open."""
    return _open_to_write(path, os.O_APPEND)


def append_bytes(path: Path, data: bytes) -> None:
    """`data` added at the end of the regular file `path` in one write, opened as `open_append`
    opens it; the bytes already there are never read."""
    fd = open_append(path)
    try:
        written = os.write(fd, data)
    except OSError as error:
        raise _named(error, path) from None
    finally:
        os.close(fd)
    if written != len(data):  # a regular file takes all of it unless the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def open_truncate(path: Path) -> int:
    """A descriptor writing the regular file `path` from empty, made as needed; refused as
    `open_append` refuses. Emptied only once it is known to be the one name of a regular file
    (never O_TRUNC): a hard link's other name keeps its bytes."""
    fd = _open_to_write(path, 0)
    try:
        os.ftruncate(fd, 0)
    except OSError as error:
        os.close(fd)
        raise _named(error, path) from None
    return fd


def _open_to_write(path: Path, mode_flag: int) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | mode_flag
    directory_fd = open_directory(path.parent)
    try:
        fd = os.open(path.name, flags, 0o644, dir_fd=directory_fd)
    except OSError as error:
        # O_NOFOLLOW met a symlink, O_NONBLOCK a FIFO nobody reads, O_WRONLY a directory.
        if error.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise _named(error, path) from None
        raise NotRegularFile(path, _entry_kind(directory_fd, path.name), writing=True) from None
    finally:
        os.close(directory_fd)
    kind = _unfit_to_write(os.fstat(fd))
    if kind is not None:
        os.close(fd)
        raise NotRegularFile(path, kind, writing=True)
    return fd


def _unfit_to_write(facts: os.stat_result) -> str | None:
    """What the opened file is when it is not a regular file with one name; else None."""
    if not stat.S_ISREG(facts.st_mode):
        return _kind(facts.st_mode)
    if facts.st_nlink > 1:  # its other name may be outside the repository
        return f"a hard link ({facts.st_nlink} names)"
    return None


def _entry_kind(directory_fd: int, name: str) -> str:
    try:
        mode = os.stat(name, dir_fd=directory_fd, follow_symlinks=False).st_mode
    except OSError:
        return "not a regular file"
    return "a symlink" if stat.S_ISLNK(mode) else _kind(mode)


def remove_file_within(top: Path, relative: str) -> None:
    """Unlink the file or symlink `relative` (`/`-separated) below `top`, every directory on the
    way reached without following a symlink: nothing is removed when one is missing, is not a
    directory or is a symlink, or when the entry is a directory. A path leading out (`..`,
    absolute, empty components) is refused (ValueError)."""
    parts = relative.split("/")
    if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{relative!r} is not a path inside the repository")
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    return
                raise
            os.close(fd)
            fd = child
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)
