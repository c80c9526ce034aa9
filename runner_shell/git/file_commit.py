"""The iteration's commit built from files, never from a work tree an agent touched.

The run's branch moves from the base commit to a commit whose tree is the base's with the
imported changes (blobs already in the object store) and the runner's own files, made
through a temporary index file (`read-tree`, `update-index --index-info`, `write-tree`,
`commit-tree`) and `update-ref` with the base as the expected old value: no `git add`, no hook,
and a branch moved meanwhile makes the commit fail rather than be lost. The run's work tree and
index then follow, only where the commit changed them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from runner_core.iteration.import_rules import FILE_MODE, Change
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.plumbing import BLOBS_DIR, BlobWriter
from runner_shell.git.repo import Repo

COMMIT_INDEX = "runner/commit-index"


@attrs.frozen(slots=True)
class FileCommit:
    """The new commit, and the ids of the runner's files' blobs in the order given (stored and
    committed: the log archive names them instead of sending their bytes again)."""

    commit: str
    blobs: tuple[str, ...]


def _git(
    repo: Repo, args: Sequence[str], stdin: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    result = run_git(
        args, repo.root, env=dict(os.environ, **(env or {})), stdin=stdin, filters=repo.filters()
    )
    if result.returncode != 0:
        raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return result.stdout


def commit_files(
    repo: Repo,
    branch: str,
    base: str,
    changes: Sequence[Change],
    runner_files: Sequence[tuple[str, bytes | str]],
    message: str,
    base_index: Callable[[Path], bool] | None = None,
) -> FileCommit:
    """Commit on `branch` (at `base`) the base's tree with `changes` and `runner_files`
    (path, bytes or text to store as UTF-8) applied. GitError when git fails or the branch moved.
    `base_index`, when given, copies an index known to hold the base's tree to the path it is
    given and says whether it did: git then need not read the base's tree."""
    with BlobWriter(repo.root, repo.git_path(BLOBS_DIR)) as blobs:
        for _, data in runner_files:
            blobs.add(data)
        oids = blobs.write()
    written = (
        Change(path, FILE_MODE, oid) for (path, _), oid in zip(runner_files, oids, strict=True)
    )
    tree = tree_with(repo, base, [*changes, *written], base_index)
    name, email = repo.identity()
    identity = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    commit_args = ["commit-tree", tree, "-p", base, "-F", "-"]
    commit = _git(repo, commit_args, message.encode("utf-8"), identity).decode().strip()
    subject = message.splitlines()[0] if message else ""
    _git(repo, ["update-ref", "-m", f"runner: {subject}", f"refs/heads/{branch}", commit, base])
    follow_commit(repo, base, commit)
    return FileCommit(commit, tuple(oids))


def tree_with(
    repo: Repo,
    base: str,
    updates: Sequence[Change],
    base_index: Callable[[Path], bool] | None = None,
) -> str:
    """The id of the tree that is commit `base`'s with `updates` applied, made through a
    temporary index file (no work tree is read or written)."""
    index = repo.git_path(COMMIT_INDEX)
    index.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        index.unlink()
    try:
        with_index = {"GIT_INDEX_FILE": str(index)}
        if base_index is None or not base_index(index):
            _git(repo, ["read-tree", base], env=with_index)
        _git(repo, ["update-index", "-z", "--index-info"], _index_info(updates), env=with_index)
        return _git(repo, ["write-tree"], env=with_index).decode().strip()
    finally:
        with contextlib.suppress(FileNotFoundError):
            index.unlink()


def _index_info(updates: Sequence[Change]) -> bytes:
    lines = []
    for change in updates:
        path = os.fsencode(change.path)
        if change.mode is None or change.oid is None:
            lines.append(b"0 " + b"0" * 40 + b"\t" + path + b"\0")
        else:
            lines.append(f"{change.mode} {change.oid}\t".encode() + path + b"\0")
    return b"".join(lines)


def follow_commit(repo: Repo, old: str, new: str, index_at_old: bool = True) -> None:
    """Bring the run's index and work tree from commit `old` to `new` where they differ, in
    one two-way `read-tree --reset -u`: changed paths are written, deleted ones removed (git
    never unlinks through a symlink), and the index takes `new` only once the work tree has
    it, so a kill midway leaves the index at `old`. Paths the commit did not change are left
    as they are, in the index with their stat data. Unless `index_at_old` (after a kill, by
    another version, the index may be anywhere between), it is put back to `old` first."""
    if not index_at_old:
        _git(repo, ["reset", "--quiet", "--no-refresh", old, "--", "."])
    _git(repo, ["read-tree", "--reset", "-u", old, new])
