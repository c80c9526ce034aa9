"""The listing of a scratch checkout the core's import rules decide over, and its blobs.

Walks the slot's work tree itself, one directory level at a time: every entry is lstat-ed
from its directory's descriptor and no symlink is ever followed; the slot's own `.git` is
skipped and never read (nor its config, index, refs or objects). Whether an entry is ignored
is asked of the run's repository (`git check-ignore`, the base commit's rules), one git
process answering level after level; an ignored directory is not entered unless the base
tracks files below it. A regular file is read with a cap and its git blob id computed here;
the bytes of every file that differs from the base are written into the run's object store,
so the commit takes exactly the bytes that were judged.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import stat
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.changes.import_rules import (
    GITLINK_MODE,
    MAX_DEPTH,
    NOTES_FILES,
    BaseEntry,
    EntryKind,
    ImportLimits,
    ScratchEntry,
    ScratchListing,
    is_git_name,
    is_runner_owned,
)
from runner_shell.git.hardened import (
    GIT_TIMEOUT_SECS,
    GitError,
    end_git,
    kill_git,
    run_git,
    start_git,
)
from runner_shell.git.plumbing import BLOBS_DIR, BlobWriter, read_objects
from runner_shell.git.repo import Repo
from runner_shell.store.files import FileTooLarge, NotRegularFile, read_bytes_capped_at

# The largest file an iteration imports; a larger one is the agent's error unless the base
# has a file of that size there (it is then kept as the base has it, unread).
IMPORT_MAX_BYTES = 64 * 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@attrs.frozen(slots=True)
class _Seen:
    path: str
    name: str
    mode: int
    size: int


def list_scratch(
    repo: Repo, slot: Path, base: str, limits: ImportLimits | None = None
) -> ScratchListing:
    """The slot's entries that are not ignored, the base commit's files and the notes' bytes.
    The walk stops, nothing written, once the new files or their bytes are past `limits`."""
    limits = ImportLimits() if limits is None else limits
    new_files = new_bytes = 0
    depth = 0
    base_listed = _base_listing(repo, base)
    base_files, kept_dirs, gitlinks = base_listed.files, base_listed.dirs, base_listed.gitlinks
    hashing = _object_format(base, base_files)
    entries: list[ScratchEntry] = []
    notes: dict[str, bytes | None] = dict.fromkeys(NOTES_FILES)
    level = [""]
    changed: list[ScratchEntry] = []
    blobs = BlobWriter(repo.root, repo.git_path(BLOBS_DIR))
    with IgnoreRules(repo) as rules, blobs:
        while level:
            depth += 1
            seen = [item for directory in level for item in _entries_of(slot, directory)]
            ignored = rules.ignored(
                [f"{s.path}/" if stat.S_ISDIR(s.mode) else s.path for s in seen]
            )
            level = []
            for item in seen:
                is_dir = stat.S_ISDIR(item.mode)
                named = f"{item.path}/" if is_dir else item.path
                if named in ignored and item.path not in kept_dirs:
                    continue
                if is_git_name(item.name):
                    entries.append(ScratchEntry(item.path, EntryKind.GIT))
                elif is_dir:
                    if depth >= MAX_DEPTH:
                        entries.append(ScratchEntry(item.path, EntryKind.TOO_DEEP))
                    elif item.path not in gitlinks:
                        level.append(item.path)
                else:
                    if item.path not in base_files:
                        new_files += 1
                        if new_files > limits.files:
                            return _stopped(base_files, ("files", new_files))
                    entry, data = _read(slot, item, hashing)
                    if item.path in notes:
                        notes[item.path] = data
                    if data is not None and _is_new_blob(entry, base_files.get(item.path)):
                        new_bytes += len(data)
                        if new_bytes > limits.stop_bytes:
                            return _stopped(base_files, ("bytes", new_bytes))
                        blobs.add(data)
                        changed.append(entry)
                    entries.append(entry)
        _check_written(changed, blobs.write())
    listed = {entry.path: entry for entry in entries}
    given: tuple[str, ...] = ()
    if any(entry.path.rpartition("/")[2] == ".gitattributes" for entry in changed):
        given = _attributes_given(repo, slot, base_files)
    notes_read = pmap(_notes(repo, base_files, listed, notes))
    return ScratchListing(tuple(entries), base_files, notes_read, runner_attributes=given)


# The runner's files whose attributes are checked when an iteration changes a `.gitattributes`.
_RUNNER_PATHS = (
    ".runner/GOAL.md",
    ".runner/.gitignore",
    ".runner/state/tree.json",
    ".runner/state/run_state.json",
    ".runner/state/config.toml",
    ".runner/state/schema.json",
)


def _attributes_given(
    repo: Repo, slot: Path, base_files: Mapping[str, BaseEntry]
) -> tuple[str, ...]:
    """`path: attribute: value` for each attribute the slot's `.gitattributes` files give a
    runner file that the run's (the base's, its work tree being clean) do not. Asked of
    `git check-attr`, in the slot with a git directory of the runner's own (the slot's
    `.git`, its info/attributes and config, are the agent's and never read)."""
    paths = sorted({*_RUNNER_PATHS, *(p for p in base_files if is_runner_owned(p))})
    stdin = b"".join(os.fsencode(path) + b"\0" for path in paths)
    args = ("check-attr", "-a", "-z", "--stdin")
    store = slot.parent / f"{slot.name}.objects"
    env = dict(os.environ, GIT_DIR=str(store), GIT_WORK_TREE=str(slot))
    found = []
    for where, environment in ((slot, env), (repo.root, None)):
        result = run_git(args, where, env=environment, stdin=stdin)
        if result.returncode != 0:
            raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
        fields = result.stdout.split(b"\0")
        triples = (fields[i : i + 3] for i in range(0, len(fields) - 2, 3))
        found.append(
            {
                os.fsdecode(b": ".join(triple))
                for triple in triples
                if triple[1] in _CONVERTING and triple[2] != b"unset"
            }
        )
    return tuple(sorted(found[0] - found[1]))


# The attributes that change a file's bytes between the object store and the work tree (every
# filter driver is disabled for the runner's git already: runner_shell/git/hardened.py).
_CONVERTING = frozenset({b"text", b"eol", b"crlf", b"ident", b"working-tree-encoding"})


def _stopped(base_files: PMap[str, BaseEntry], stopped: tuple[str, int]) -> ScratchListing:
    """The listing of a walk stopped past a limit: no entries, no blob written."""
    return ScratchListing((), base_files, pmap(), stopped)


@attrs.frozen(slots=True)
class _BaseListing:
    """A commit's files, the directories above them and its submodules' paths."""

    files: PMap[str, BaseEntry]
    dirs: frozenset[str]
    gitlinks: frozenset[str]


@attrs.define
class _Listed:
    """One commit's listing, read by the first thread to ask while the others wait for it."""

    lock: threading.Lock = attrs.field(factory=threading.Lock)
    listing: _BaseListing | None = None


# The commits listed last, by object store and id: a commit never changes, and the parallel
# loop's jobs started at one head list their slots against it at about the same time
# (docs/parallel.md). A few are kept, the newest first, and no more files than a large
# repository's in all: the head moves on as jobs merge, and a one-slot run never lists a
# commit twice.
_BASE_LISTINGS: OrderedDict[tuple[str, str], _Listed] = OrderedDict()
_BASE_LISTINGS_KEPT = 4
_BASE_LISTINGS_FILES = 200_000
_BASE_LISTINGS_LOCK = threading.Lock()
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _base_listing(repo: Repo, base: str) -> _BaseListing:
    """Commit `base`'s listing, read once for every slot listed against it (a name that is
    not an object id, which could move, is read every time)."""
    if not _OBJECT_ID.fullmatch(base):
        return _listing_of(base_entries(repo, base))
    key = (str(repo.common_path("objects")), base)
    with _BASE_LISTINGS_LOCK:
        listed = _BASE_LISTINGS.pop(key, None) or _Listed()
        _BASE_LISTINGS[key] = listed
        while len(_BASE_LISTINGS) > _BASE_LISTINGS_KEPT:
            _BASE_LISTINGS.popitem(last=False)
    with listed.lock:
        if listed.listing is None:
            listed.listing = _listing_of(base_entries(repo, base))
    with _BASE_LISTINGS_LOCK:
        _forget_beyond(_BASE_LISTINGS_FILES)
    return listed.listing


def _forget_beyond(files: int) -> None:
    """Forget listings, the newest kept first, past `files` files in all (one being read
    counts none: its readers hold it)."""
    held = 0
    for key in reversed(tuple(_BASE_LISTINGS)):
        listing = _BASE_LISTINGS[key].listing
        held += 0 if listing is None else len(listing.files)
        if held > files:
            del _BASE_LISTINGS[key]


def _listing_of(files: dict[str, BaseEntry]) -> _BaseListing:
    return _BaseListing(
        pmap(files),
        frozenset(parent for path in files for parent in _parents(path)),
        frozenset(path for path, entry in files.items() if entry.mode == GITLINK_MODE),
    )


def _notes(
    repo: Repo,
    base_files: Mapping[str, BaseEntry],
    listed: dict[str, ScratchEntry],
    scratch: dict[str, bytes | None],
) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Each notes file's bytes in the base and in the slot. The base's are read from git only
    where the slot's differ: a notes file the agent left as it was is its base's blob."""
    unread = [
        path
        for path in NOTES_FILES
        if path in base_files and (path not in listed or listed[path].oid != base_files[path].oid)
    ]
    read = dict(
        zip(unread, read_objects(repo.root, [base_files[p].oid for p in unread]), strict=True)
    )
    return {
        path: (
            None if path not in base_files else read.get(path, scratch[path]),
            scratch[path],
        )
        for path in NOTES_FILES
    }


def base_entries(repo: Repo, base: str) -> dict[str, BaseEntry]:
    """Every file of commit `base` (`git ls-tree -r -l`), by path."""
    result = run_git(["ls-tree", "-r", "-l", "-z", "--full-tree", base], repo.root)
    if result.returncode != 0:
        raise GitError.failed(["ls-tree", base], result.stderr.decode("utf-8", "replace"))
    found: dict[str, BaseEntry] = {}
    for record in result.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, oid, size = meta.split()
        found[os.fsdecode(path)] = BaseEntry(
            mode.decode(), oid.decode(), int(size) if size.isdigit() else 0
        )
    return found


def _parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for end in range(1, len(parts)):
        yield "/".join(parts[:end])


def _object_format(base: str, base_files: Mapping[str, BaseEntry]) -> str:
    """The repository's hash, told by the length of the object ids git gave (no git call)."""
    oid = next((entry.oid for entry in base_files.values()), base)
    return "sha256" if len(oid) == 64 else "sha1"


def _open_directory(slot: Path, relative: str) -> int:
    """A descriptor of the slot's directory `relative`, each component opened without
    following a symlink (a component swapped for one since it was listed is an OSError)."""
    fd = os.open(slot, _DIR_FLAGS)
    for part in relative.split("/") if relative else ():
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def _entries_of(slot: Path, directory: str) -> list[_Seen]:
    fd = _open_directory(slot, directory)
    try:
        found = []
        with os.scandir(fd) as scan:
            for entry in scan:
                if not directory and entry.name == ".git":
                    continue  # the slot's own repository: the agent's, never read
                facts = entry.stat(follow_symlinks=False)
                path = f"{directory}/{entry.name}" if directory else entry.name
                found.append(_Seen(path, entry.name, facts.st_mode, facts.st_size))
    finally:
        os.close(fd)
    return sorted(found, key=lambda item: item.path)


class IgnoreRules:
    """Which paths the base's ignore rules exclude (`dir/` for a directory; a file the base
    tracks never is), asked of the run's repository level after level through one `git
    check-ignore` process: it answers every path (`--non-matching --verbose`), in order."""

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> IgnoreRules:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self._proc is not None:
            end_git(self._proc, killed=kind is not None)

    def ignored(self, paths: list[str]) -> set[str]:
        if not paths:
            return set()
        if self._proc is None:
            self._proc = start_git(_CHECK_IGNORE, self._repo.root, filters=self._repo.filters())
        proc = self._proc
        assert proc.stdin is not None and isinstance(proc.stdout, io.BufferedReader)
        # `./` first: a name starting with `:` is never read as pathspec magic.
        stdin = b"".join(b"./" + os.fsencode(path) + b"\0" for path in paths)
        writer = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
        deadline = threading.Timer(GIT_TIMEOUT_SECS, kill_git, (proc,))
        writer.start()
        deadline.start()
        try:
            fields = _read_fields(proc.stdout, 4 * len(paths))
        finally:
            deadline.cancel()
            writer.join()
        if fields is None:
            raise GitError.failed(_CHECK_IGNORE, _complaint(proc))
        # Each answer: source, line, pattern (`!` first when it re-includes), path.
        patterns = fields[2::4]
        return {
            path
            for path, rule in zip(paths, patterns, strict=True)
            if rule and not rule.startswith(b"!")
        }


_CHECK_IGNORE = ("check-ignore", "-z", "--stdin", "--verbose", "--non-matching")


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError):  # git died: the reader reports it
        stream.write(data)
        stream.flush()


def _read_fields(stream: io.BufferedReader, count: int) -> list[bytes] | None:
    """The next `count` NUL-terminated fields of `stream`; None when it ends first."""
    chunks: list[bytes] = []
    seen = 0
    while seen < count:
        chunk = stream.read1(65536)
        if not chunk:
            return None
        chunks.append(chunk)
        seen += chunk.count(b"\0")
    data = b"".join(chunks)
    fields = data.split(b"\0")
    if seen != count or fields[-1]:
        return None  # more than was asked: not an answer
    return fields[:-1]


def _complaint(proc: subprocess.Popen[bytes]) -> str:
    errors = proc.stderr
    if errors is None:
        return ""
    kill_git(proc)
    proc.wait()
    errors.seek(0)
    return errors.read(4096).decode("utf-8", "replace")


def _blob_id(data: bytes, hashing: str) -> str:
    return hashlib.new(hashing, b"blob %d\0" % len(data) + data).hexdigest()


def _read(slot: Path, item: _Seen, hashing: str) -> tuple[ScratchEntry, bytes | None]:
    """The entry as the rules see it, and the bytes of its blob when it has one."""
    if stat.S_ISLNK(item.mode):
        fd = _open_directory(slot, item.path.rpartition("/")[0])
        try:
            target = os.readlink(item.name, dir_fd=fd)
        finally:
            os.close(fd)
        data = os.fsencode(target)
        entry = ScratchEntry(item.path, EntryKind.SYMLINK, len(data), _blob_id(data, hashing))
        return attrs.evolve(entry, target=target), data
    if not stat.S_ISREG(item.mode):
        return ScratchEntry(item.path, EntryKind.SPECIAL, item.size), None
    if item.size > IMPORT_MAX_BYTES:
        return ScratchEntry(item.path, EntryKind.TOO_LARGE, item.size), None
    fd = _open_directory(slot, item.path.rpartition("/")[0])
    try:
        data = read_bytes_capped_at(fd, item.name, IMPORT_MAX_BYTES)
    except FileTooLarge as error:  # it grew since it was listed
        return ScratchEntry(item.path, EntryKind.TOO_LARGE, error.size), None
    except NotRegularFile:  # it was replaced since it was listed
        return ScratchEntry(item.path, EntryKind.SPECIAL, item.size), None
    finally:
        os.close(fd)
    kind = EntryKind.EXECUTABLE if item.mode & stat.S_IXUSR else EntryKind.FILE
    return ScratchEntry(item.path, kind, len(data), _blob_id(data, hashing)), data


def _is_new_blob(entry: ScratchEntry, base: BaseEntry | None) -> bool:
    """Whether the entry's blob may be new (a mode change alone reuses the base's blob) and is
    to be written: the runner's own files are never imported, so never written."""
    return (base is None or base.oid != entry.oid) and not is_runner_owned(entry.path)


def _check_written(entries: list[ScratchEntry], oids: list[str]) -> None:
    """The blobs git wrote are the ones the rules judged, whose bytes went into the run's
    object store so the commit takes exactly them."""
    for entry, oid in zip(entries, oids, strict=True):
        if oid != entry.oid:
            raise GitError(f"git hash-object gave another id for {entry.path!r}")
