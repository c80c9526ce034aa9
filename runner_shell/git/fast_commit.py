"""A commit written by one `git fast-import`: a base commit's tree with some paths changed,
parented on the base, its new files' bytes sent inline.

Where plumbing takes five processes (hash-object, read-tree, update-index, write-tree,
commit-tree), fast-import takes one, and reads only the base's subtrees a change reaches.
fast-import must name a ref for its commit: it names one of its own process and thread and
resets it before it ends, so no ref is written (two runs of one repository never lock the same
ref) and the caller moves the real branch itself; the new objects' ids come back through an
exported marks file in the git directory (one per thread, removed once read), out of an
agent's reach. No hook,
filter or config of the repository's runs (runner_shell/git/hardened.py), and the message is
kept byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence

import attrs

from runner_core.changes.import_rules import Change
from runner_shell.git.hardened import (
    GIT_TIMEOUT_SECS,
    GitError,
    GitTimeout,
    end_git,
    kill_git,
    start_git,
)
from runner_shell.git.repo import Repo
from runner_shell.store.files import encoded_slices

# The largest new file sent inline; a larger one is stored by hash-object first (git would
# otherwise deflate it twice: into fast-import's pack, then loose by unpack-objects).
INLINE_LIMIT_BYTES = 1 << 20
# The commit's deadline: past it fast-import and its process group are killed and the commit
# fails (the iteration stays logged for `runner recover`), however large the import.
COMMIT_TIMEOUT_SECS = GIT_TIMEOUT_SECS


@attrs.frozen(slots=True)
class ImportedCommit:
    """The commit, and the ids of the inline files' blobs in the order given."""

    commit: str
    blobs: tuple[str, ...]


def _quoted(path: str) -> bytes:
    """`path` as a C-style quoted fast-import path: any byte may stand in it."""
    out = bytearray(b'"')
    for byte in os.fsencode(path):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def _data(payload: bytes | str) -> Iterator[bytes]:
    """A `data` command: its length, then the payload (text: UTF-8, a slice at a time)."""
    if isinstance(payload, bytes):
        yield b"data %d\n" % len(payload)
        yield payload
    else:
        size = len(payload) if payload.isascii() else sum(map(len, encoded_slices(payload)))
        yield b"data %d\n" % size
        yield from encoded_slices(payload)
    yield b"\n"


def _stream(
    base: str,
    changes: Sequence[Change],
    inline: Sequence[tuple[str, bytes | str]],
    identity: tuple[str, str],
    message: str,
) -> Iterator[bytes]:
    for number, (_, data) in enumerate(inline, start=1):
        yield b"blob\nmark :%d\n" % number
        yield from _data(data)
    name, email = identity
    ref = f"refs/runner/import-{os.getpid()}-{threading.get_ident()}"
    yield f"commit {ref}\nmark :{len(inline) + 1}\n".encode()
    for role in ("author", "committer"):
        yield f"{role} {name} <{email}> now\n".encode()
    yield from _data(message.encode("utf-8"))
    yield f"from {base}\n".encode()
    # Removals first: a file may give way to a directory of the same name.
    for change in changes:
        if change.mode is None or change.oid is None:
            yield b"D " + _quoted(change.path) + b"\n"
    for change in changes:
        if change.mode is not None and change.oid is not None:
            yield f"M {change.mode} {change.oid} ".encode() + _quoted(change.path) + b"\n"
    for number, (path, _) in enumerate(inline, start=1):
        yield b"M 100644 :%d " % number + _quoted(path) + b"\n"
    # A reset without `from` leaves the ref unwritten: the commit is known by its mark.
    yield f"\nreset {ref}\n\ndone\n".encode()


def import_commit(
    repo: Repo,
    base: str,
    changes: Sequence[Change],
    inline: Sequence[tuple[str, bytes | str]],
    identity: tuple[str, str],
    message: str,
    timeout: float = COMMIT_TIMEOUT_SECS,
) -> ImportedCommit:
    """A commit (no ref points to it) of `base`'s tree with `changes` (blobs already
    stored) and `inline` (path, bytes or text) applied; GitError when git fails, GitTimeout
    past `timeout`. A signal (SIGTERM, SIGINT) meanwhile kills git and raises Interrupted:
    the runner never sits in a commit it was told to stop."""
    from runner_shell.signals import Interrupted

    marks = repo.git_path(f"runner/fast-commit-{threading.get_ident()}.marks")
    marks.parent.mkdir(parents=True, exist_ok=True)
    marks.unlink(missing_ok=True)
    args = (
        "fast-import",
        "--quiet",
        "--done",
        "--force",
        "--date-format=now",
        f"--export-marks={marks}",
    )
    proc = start_git(args, repo.root, filters=repo.filters())
    assert proc.stdin is not None
    late = threading.Event()

    def expire() -> None:
        late.set()
        kill_git(proc)

    deadline = threading.Timer(timeout, expire)
    deadline.start()
    try:
        with _stoppable():
            try:
                for part in _stream(base, changes, inline, identity, message):
                    proc.stdin.write(part)
            except BrokenPipeError:  # git ended early: its exit status says why
                pass
            end_git(proc)
    except Interrupted:
        end_git(proc, killed=True)
        raise
    finally:
        deadline.cancel()
    if late.is_set():
        raise GitTimeout(f"git fast-import timed out after {timeout:g} s; the commit was not made")
    if proc.returncode != 0:
        raise GitError.failed(args, f"git fast-import exited {proc.returncode}")
    try:
        return _marked(marks.read_bytes(), len(inline))
    except OSError as error:
        raise GitError(f"git fast-import left no marks file: {error.strerror}") from None
    finally:
        marks.unlink(missing_ok=True)


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """A signal arriving inside the block raises Interrupted there (in the main thread). One
    heard before it is not: the commits of an interrupted loop's cleanup go on (a second
    signal then ends the runner at once, leaving the journal)."""
    from runner_shell.signals import Interrupts, in_a_job

    if Interrupts.pending is not None or in_a_job():
        yield
        return
    Interrupts.raising = True
    try:
        yield
    finally:
        Interrupts.raising = False


def _marked(text: bytes, inline: int) -> ImportedCommit:
    """The commit's and the blobs' ids from an exported marks file (`:<mark> <id>` lines)."""
    ids: dict[int, str] = {}
    for line in text.decode("ascii", "replace").splitlines():
        mark, _, oid = line.partition(" ")
        if mark[1:].isdigit():
            ids[int(mark[1:])] = oid.strip()
    try:
        return ImportedCommit(ids[inline + 1], tuple(ids[n] for n in range(1, inline + 1)))
    except KeyError:
        raise GitError("git fast-import exported no id for the commit") from None
