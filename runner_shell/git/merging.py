"""Git's part of a parallel job's merge: the entries of its paths at two commits, a file changed
on both sides merged line by line, a job's changes carried onto a later head (its merge, and
its recovery after a kill), and the merged result as a commit no branch points to.

What merges and what conflicts is runner_core.parallel.job_merge's decision; this reads and
writes git objects only (hardened git with a deadline), never a work tree or a ref.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from runner_core.changes.import_rules import Change
from runner_core.parallel.additions import join_additions, marker_length
from runner_core.parallel.job_merge import Entry, merge_files
from runner_core.parallel.merge_session import MarkedFile
from runner_shell.git.fast_commit import import_commit
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import FALLBACK_EMAIL, FALLBACK_NAME, Repo

# Paths per `git ls-tree` call: argv stays far below the system's limit.
_PATHS_PER_CALL = 500


def _git(repo: Repo, args: Sequence[str], stdin: bytes | None = None, ok: int = 0) -> bytes:
    result = run_git(args, repo.root, stdin=stdin, filters=repo.filters())
    if not 0 <= result.returncode <= ok:
        raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return result.stdout


def entries_at(repo: Repo, commit: str, paths: Sequence[str]) -> dict[str, Entry]:
    """Each of `paths` at `commit`: its mode and blob id; a path it does not have is left out."""
    found: dict[str, Entry] = {}
    for start in range(0, len(paths), _PATHS_PER_CALL):
        chunk = paths[start : start + _PATHS_PER_CALL]
        out = _git(repo, ["ls-tree", "-r", "-z", "--full-tree", commit, "--", *chunk])
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, _kind, oid = meta.decode("ascii").split(" ")
            found[os.fsdecode(raw_path)] = (mode, oid)
    wanted = set(paths)
    return {path: entry for path, entry in found.items() if path in wanted}


def carry_onto(
    repo: Repo,
    base: str,
    head: str,
    changes: Sequence[Change],
    base_entries: Mapping[str, Entry] | None = None,
) -> tuple[tuple[Change, ...], tuple[str, ...]]:
    """`changes` made from commit `base`, merged onto commit `head` as
    runner_core.parallel.job_merge.merge_files says, a file changed on both sides line by
    line: the changes to apply to `head` (sorted by path) and the paths that conflict.
    `base_entries`, when given, is what `entries_at(repo, base, paths)` of the changes' paths
    gave (a job reads it in its own thread, while the merge queue is busy with others)."""
    paths = [change.path for change in changes]
    if base_entries is None:
        base_entries = entries_at(repo, base, paths)
    head_entries = entries_at(repo, head, paths)
    merge = merge_files(changes, base_entries, head_entries)
    joined = list(merge.clean)
    conflicts = list(merge.conflicts)
    for change in merge.both:
        base_entry, head_entry = base_entries[change.path], head_entries[change.path]
        assert base_entry is not None and head_entry is not None and change.oid is not None
        oid = merge_lines(repo, base_entry[1], head_entry[1], change.oid)
        if oid is None:
            conflicts.append(change.path)
        else:
            joined.append(attrs.evolve(change, oid=oid))
    return tuple(sorted(joined, key=lambda change: change.path)), tuple(sorted(conflicts))


def merge_lines(repo: Repo, base: str, head: str, mine: str) -> str | None:
    """The blob of the three-way line merge of blobs `head` and `mine` from `base` (git
    merge-file), stored in the repository; where the two sides only added lines at one place,
    both kept (runner_core.parallel.additions); None when their changes overlap otherwise."""
    with tempfile.TemporaryDirectory(prefix="runner-merge-") as scratch:
        texts, names = [], []
        for label, oid in (("head", head), ("base", base), ("mine", mine)):
            path = Path(scratch) / label
            texts.append(_git(repo, ["cat-file", "blob", oid]))
            path.write_bytes(texts[-1])
            names.append(str(path))
        conflicts, merged = _merge_file(repo, names)
        if conflicts:
            length = marker_length(*texts)
            _, marked = _merge_file(repo, names, "--diff3", f"--marker-size={length}")
            joined = join_additions(marked, length)
            if joined is None:
                return None
            merged = joined
    return _git(repo, ["hash-object", "-w", "--stdin"], merged).decode("ascii").strip()


def marked_conflicts(
    repo: Repo, base: str, head: str, changes: Sequence[Change], conflicts: Sequence[str]
) -> tuple[MarkedFile, ...]:
    """Each of `conflicts` that is a regular file on all three sides (the job's `changes`
    from commit `base`, and `head`), merged with its conflicts marked in the diff3 style by
    markers longer than any line of the three begins with; the others are left out."""
    mine = {change.path: change for change in changes if change.path in set(conflicts)}
    paths = sorted(mine)
    before, now = entries_at(repo, base, paths), entries_at(repo, head, paths)
    marked: list[MarkedFile] = []
    for path in paths:
        change, base_entry, head_entry = mine[path], before.get(path), now.get(path)
        if base_entry is None or head_entry is None or change.oid is None or not change.mode:
            continue
        if {base_entry[0], head_entry[0], change.mode} - {"100644", "100755"}:
            continue
        oids = (head_entry[1], base_entry[1], change.oid)
        with tempfile.TemporaryDirectory(prefix="runner-marks-") as scratch:
            texts, names = [], []
            for label, oid in zip(("head", "base", "mine"), oids, strict=True):
                texts.append(_git(repo, ["cat-file", "blob", oid]))
                (Path(scratch) / label).write_bytes(texts[-1])
                names.append(str(Path(scratch) / label))
            length = marker_length(*texts)
            _, text = _merge_file(repo, names, "--diff3", f"--marker-size={length}")
        marked.append(MarkedFile(path, change.mode, text, length))
    return tuple(marked)


def stored_blob(repo: Repo, data: bytes) -> str:
    """The id of `data` as a blob written to the repository."""
    return _git(repo, ["hash-object", "-w", "--stdin"], data).decode("ascii").strip()


def _merge_file(repo: Repo, names: Sequence[str], *options: str) -> tuple[int, bytes]:
    """`git merge-file -p` of the files `names` (head, base, mine): how many conflicts it
    found (capped at 127) and the merged bytes, conflicts marked."""
    labels = ("-L", "head", "-L", "base", "-L", "mine")
    result = run_git(
        ["merge-file", "-p", "--quiet", *options, *labels, *names], repo.root, filters=()
    )
    if result.returncode >= 128 or result.returncode < 0:
        raise GitError.failed(["merge-file"], result.stderr.decode("utf-8", "replace"))
    return result.returncode, result.stdout


def merged_commit(repo: Repo, head: str, changes: Sequence[Change], message: str) -> str:
    """A commit on top of `head` with `changes` applied, which no ref points to: the checkout
    a merged job's guard runs in again. No one reads its author: the runner's identity,
    without asking git."""
    identity = (FALLBACK_NAME, FALLBACK_EMAIL)
    return import_commit(repo, head, changes, (), identity, message).commit
