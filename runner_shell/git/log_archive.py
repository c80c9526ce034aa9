"""Iteration logs archived in git, outside the work tree: `refs/runner/logs/<run-id>`.

Each archived iteration is one commit whose tree holds every archived iteration (the previous
commit's tree plus this one), so the ref's tip restores the whole run. They are kept a hundred
to a directory, `<first>-<last>/<iter>/` (iteration 1537 in `1500-1599/1537/`): an iteration
rewrites its shard's tree and the root's, both small however long the run, never a tree with an
entry for every earlier iteration. An archive an older runner wrote holds them at the root,
`<iter>/`; both read alike.

A step archives with one `git fast-import`; otherwise plumbing (hash-object, mktree,
commit-tree, update-ref against the old value) does it. Either way the index and work tree are
never touched and identical bytes are one blob; through plumbing, archiving twice adds nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from runner_core.run.config import MAX_RERUNS
from runner_shell.git.hardened import end_git, start_git
from runner_shell.git.plumbing import ZERO_OID, git_bytes, read_objects
from runner_shell.git.repo import FALLBACK_EMAIL, FALLBACK_NAME, GitError
from runner_shell.store.files import (
    FileTooLarge,
    NotRegularFile,
    atomic_write_bytes,
    read_bytes_capped,
)

LOGS_REF_PREFIX = "refs/runner/logs/"

# Every file of an iteration directory (its log and the prompt pack); nothing else is archived
# or restored.
ARCHIVED_NAMES: frozenset[str] = frozenset(
    {
        "meta.json",
        "output.json",
        "planner_output.json",
        "planner_executor.log",
        "executor.log",
        "guard.log",
        "runner_error.log",
        "agent_error.log",
        "tree.before.json",
        "tree.after.json",
        "prompt.md",
        "agent_output.json",
        "usage.json",
        "tests.json",
        "import.log",
        "network.log",
        "setup.log",
        "guard.baseline.log",
        *(f"guard.rerun-{number}.log" for number in range(1, MAX_RERUNS + 1)),
    }
)

# The largest an iteration file may be: a log keeps up to 64 MiB of each of two streams (the
# config's ceiling), which decoding with replacement characters may triple, and a tree snapshot
# is at most 128 MiB. Anything larger is not the runner's and is left out unread. The files are
# read and handed to git one at a time, so that many of them near the cap (sparse files the
# agent made under these names) cost the memory of one, never of all.
ARCHIVED_FILE_MAX_BYTES = 2 * 3 * 64 * 1024 * 1024 + 1024 * 1024


class ArchiveError(Exception):
    """The archive cannot be written or restored; str() is one line naming what and why."""


class NothingToArchive(ArchiveError):
    """The iteration directory holds no file to archive: it is gone, or was emptied."""


def _files_to_archive(
    directory: Path, skip: frozenset[str] = frozenset()
) -> Iterator[tuple[str, bytes]]:
    """The iteration's archived files, each read when the caller comes to it; NothingToArchive
    at once when there is none."""
    files = _archived_files(directory, skip)
    first = next(files, None)
    if first is None:
        raise NothingToArchive(f"{directory}: no iteration files to archive")
    return itertools.chain((first,), files)


def logs_ref(run_id: str) -> str:
    return LOGS_REF_PREFIX + run_id


# Iterations per directory of the archive's root.
SHARD_SIZE = 100


def _shard(iteration: int) -> str:
    first = iteration // SHARD_SIZE * SHARD_SIZE
    return f"{first}-{first + SHARD_SIZE - 1}"


def archived_dir(iteration: int) -> str:
    """Where the archive holds iteration `iteration`'s files, below its root."""
    return f"{_shard(iteration)}/{iteration}"


def _tip(root: Path, ref: str) -> str | None:
    out = git_bytes(root, ["rev-parse", "--verify", "--quiet", ref + "^{commit}"], ok_codes=(0, 1))
    return out.decode().strip() or None


def archive_tip(root: Path, run_id: str) -> str | None:
    """The commit the run's log archive is at; None when this repository has none."""
    return _tip(root, logs_ref(run_id))


def _archived_files(directory: Path, skip: frozenset[str]) -> Iterator[tuple[str, bytes]]:
    """The iteration's regular files with archived names, `(name, bytes)`, each read once from
    one descriptor: a symlink, FIFO or other there, or a file past the cap, is left out unread
    (a daemon may swap one in at any moment)."""
    for name in sorted(ARCHIVED_NAMES - skip):
        try:
            data = read_bytes_capped(directory / name, ARCHIVED_FILE_MAX_BYTES)
        except (FileNotFoundError, NotRegularFile, FileTooLarge):
            continue
        yield name, data


def _mktree(root: Path, entries: list[tuple[str, str, str, str]]) -> str:
    """A tree from `(mode, type, sha, name)` entries."""
    lines = "".join(f"{mode} {kind} {sha}\t{name}\n" for mode, kind, sha, name in entries)
    return git_bytes(root, ["mktree"], lines.encode("utf-8")).decode().strip()


def _tree_entries(root: Path, tree: str | None) -> dict[str, tuple[str, str, str, str]]:
    """The entries of `tree` (a tree-ish) by name; none for None."""
    if tree is None:
        return {}
    out = git_bytes(root, ["ls-tree", "-z", tree]).decode("utf-8")
    entries = {}
    for line in filter(None, out.split("\0")):
        head, name = line.split("\t", 1)
        mode, kind, sha = head.split(" ")
        entries[name] = (mode, kind, sha, name)
    return entries


def archive_iteration(root: Path, run_id: str, iteration: int, directory: Path) -> str | None:
    """Archive `directory` as iteration `iteration` of `run_id`; the new tip, or None when the
    archive already holds exactly these bytes."""
    files = _files_to_archive(directory)
    blobs = [("100644", "blob", _blob(root, data), name) for name, data in files]
    subtree = _mktree(root, blobs)
    ref = logs_ref(run_id)
    tip = _tip(root, ref)
    entries = _tree_entries(root, tip)
    name, shard = str(iteration), _shard(iteration)
    held = entries.get(shard)
    shard_entries = _tree_entries(root, held[2] if held is not None else None)
    if shard_entries.get(name, ("", "", "", ""))[2] == subtree and name not in entries:
        return None
    entries.pop(name, None)  # where an older runner archived it
    shard_entries[name] = ("040000", "tree", subtree, name)
    entries[shard] = ("040000", "tree", _mktree(root, list(shard_entries.values())), shard)
    tree = _mktree(root, list(entries.values()))
    parents = ["-p", tip] if tip is not None else []
    message = _message(run_id, iteration)
    commit = git_bytes(root, ["commit-tree", tree, *parents], message, as_runner=True)
    new = commit.decode().strip()
    # Against the old value: a concurrent archive makes this fail instead of losing one.
    git_bytes(root, ["update-ref", ref, new, tip or ZERO_OID])
    return new


def _blob(root: Path, data: bytes) -> str:
    return git_bytes(root, ["hash-object", "-w", "--no-filters", "--stdin"], data).decode().strip()


def _message(run_id: str, iteration: int) -> bytes:
    return f"runner logs: run {run_id} iter {iteration}\n".encode()


def _data(payload: bytes) -> tuple[bytes, bytes, bytes]:
    """A fast-import `data` command, in parts: the payload is joined once, never copied first."""
    return b"data %d\n" % len(payload), payload, b"\n"


# An archived file's bytes in a fast-import stream: inline, or a blob already in the store.
Content = bytes | str


def _import_stream(
    run_id: str,
    iteration: int,
    files: Iterator[tuple[str, Content]],
    parented: bool,
    copies: tuple[tuple[str, str], ...] = (),
) -> Iterator[bytes]:
    """A `git fast-import` stream of one archive commit, in parts, each file read only when
    its part is wanted: the parent's tree (when `parented`) with `<iteration>/` replaced by
    the iteration's files, each inline (bytes) or by the id of a blob already stored (str),
    and `copies` (name, path in the parent's tree) copied."""
    ref = logs_ref(run_id)
    place = archived_dir(iteration)
    yield f"commit {ref}\n".encode()
    yield f"committer {FALLBACK_NAME} <{FALLBACK_EMAIL}> now\n".encode()
    yield from _data(_message(run_id, iteration))
    if parented:
        yield f"from {ref}^0\n".encode()
    yield f"D {place}\n".encode()
    yield f"D {iteration}\n".encode()  # where an older runner archived it
    for name, source in copies:
        yield f"C {source} {place}/{name}\n".encode()
    for name, data in files:
        if isinstance(data, str):
            yield f"M 100644 {data} {place}/{name}\n".encode()
            continue
        yield f"M 100644 inline {place}/{name}\n".encode()
        yield from _data(data)
    yield b"\ndone\n"


def _fast_import(root: Path, parts: Iterator[bytes]) -> None:
    """Feed `parts` to one `git fast-import` as they come; GitError when it fails."""
    args = ("fast-import", "--quiet", "--done", "--date-format=now")
    proc = start_git(args, root)
    assert proc.stdin is not None
    try:
        for part in parts:
            proc.stdin.write(part)
    except BrokenPipeError:  # git ended early: its exit status says why
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        end_git(proc)
    if proc.returncode != 0:
        raise GitError.failed(args, "git fast-import failed")


def _same_file(one: Path, other: Path) -> bool:
    """Whether the two names are links of one regular file (never followed through a symlink)."""
    try:
        first, second = os.stat(one, follow_symlinks=False), os.stat(other, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(first.st_mode) and (first.st_dev, first.st_ino) == (
        second.st_dev,
        second.st_ino,
    )


def archive_after_commit(
    root: Path,
    run_id: str,
    iteration: int,
    directory: Path,
    committed: Mapping[str, str] | None = None,
) -> bool:
    """Archive the iteration a step has just committed, in one git process in the usual case:
    one `git fast-import` on top of the ref, which exists from iteration 2 on. When that guess
    is wrong (a clone without the refs, an iteration archived before), the careful plumbing
    of `archive_iteration` does it instead.

    Tree snapshots are not read or sent again: `committed` names the files the runner wrote
    from the text of a file the commit just stored (tree.after.json is tree.json's), with that
    blob's id, and a tree.before.json that is a link of the previous iteration's
    tree.after.json is copied from the previous archive commit, which holds those bytes.
    True when it was: the archive then holds the previous iteration's snapshots for certain
    (fast-import refuses to copy a path its parent lacks)."""
    committed = committed or {}
    copies: tuple[tuple[str, str], ...] = ()
    previous = directory.parent / str(iteration - 1) / "tree.after.json"
    if iteration > 1 and _same_file(directory / "tree.before.json", previous):
        copies = (("tree.before.json", f"{archived_dir(iteration - 1)}/tree.after.json"),)
    skip = frozenset(name for name, _ in copies) | frozenset(committed)
    named: list[tuple[str, Content]] = sorted(committed.items())
    contents = itertools.chain(named, _files_to_archive(directory, skip))
    stream = _import_stream(run_id, iteration, contents, parented=iteration > 1, copies=copies)
    try:
        _fast_import(root, stream)
    except GitError:
        try:
            archive_iteration(root, run_id, iteration, directory)
        except GitError as error:
            raise ArchiveError(f"{logs_ref(run_id)}: {error}") from None
        return False
    return bool(copies)


def _archived_entries(root: Path, ref: str) -> list[tuple[int, str, str]]:
    """`(iteration, name, blob sha)` of the ref's tip, by iteration and name; refuses anything
    else it holds. A file held both in its shard and at the root (an older runner's place) is
    the shard's."""
    out = git_bytes(root, ["ls-tree", "-r", "-z", ref]).decode("utf-8")
    found: dict[tuple[int, str], tuple[bool, str]] = {}
    for line in filter(None, out.split("\0")):
        head, path = line.split("\t", 1)
        mode, kind, sha = head.split(" ")
        parts = path.split("/")
        number = parts[-2] if len(parts) in (2, 3) else ""
        if not (number.isascii() and number.isdigit() and str(int(number)) == number):
            raise ArchiveError(f"{ref}: '{path}' is not under an iteration number; refusing it")
        sharded = len(parts) == 3
        if sharded and parts[0] != _shard(int(number)):
            raise ArchiveError(f"{ref}: '{path}' is not in its iteration's shard; refusing it")
        name = parts[-1]
        if int(number) < 1 or name not in ARCHIVED_NAMES or (mode, kind) != ("100644", "blob"):
            raise ArchiveError(f"{ref}: '{path}' is not a known iteration file; refusing it")
        key = (int(number), name)
        if sharded or key not in found or not found[key][0]:
            found[key] = (sharded, sha)
    return [(number, name, sha) for (number, name), (_, sha) in sorted(found.items())]


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise ArchiveError(f"{path} is a symbolic link the runner did not create; refusing it")


def restore(root: Path, run_id: str, run_dir: Path) -> tuple[int, ...]:
    """Re-create `run_dir` (`.runner/iterations/<run>/`) from the archive; the iterations
    restored. Existing files of those names are replaced; nothing is followed through a link."""
    ref = logs_ref(run_id)
    if _tip(root, ref) is None:
        raise ArchiveError(f"no archived logs for run {run_id} ({ref} does not exist)")
    entries = _archived_entries(root, ref)
    blobs = read_objects(root, [sha for _, _, sha in entries])
    for directory in (run_dir.parent, run_dir):
        _refuse_symlink(directory)
    for (number, name, sha), data in zip(entries, blobs, strict=True):
        if data is None:
            raise GitError(f"git cat-file: blob {sha} of {ref} is missing")
        target = run_dir / str(number)
        _refuse_symlink(target)
        atomic_write_bytes(target / name, data)
    return tuple(sorted({number for number, _, _ in entries}))


def read_archived(
    root: Path, run_id: str, names: frozenset[str], iteration: int | None = None
) -> dict[tuple[int, str], bytes] | None:
    """The archived files called one of `names` (of one iteration, when given), by
    `(iteration, name)`; None when the run has no archive."""
    ref = logs_ref(run_id)
    if _tip(root, ref) is None:
        return None
    entries = [
        entry
        for entry in _archived_entries(root, ref)
        if entry[1] in names and iteration in (None, entry[0])
    ]
    blobs = read_objects(root, [sha for _, _, sha in entries])
    return {
        (number, name): data
        for (number, name, _), data in zip(entries, blobs, strict=True)
        if data is not None
    }
