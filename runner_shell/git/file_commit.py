"""The iteration's commit built from files, never from a work tree an agent touched.

The run's branch moves from the base commit to a commit whose tree is the base's with the
imported changes (blobs already in the object store) and the runner's own files, written by
one `git fast-import` (runner_shell/git/fast_commit.py), then `update-ref` with the base as the
expected old value: no `git add`, no index, no hook, and a branch moved meanwhile makes the
commit fail rather than be lost. The run's work tree and index then follow, only where the
commit changed them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from runner_core.changes.import_rules import FILE_MODE, Change
from runner_core.iteration.effects import AttemptCommit
from runner_shell.git.fast_commit import INLINE_LIMIT_BYTES, import_commit
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.plumbing import BLOBS_DIR, BlobWriter
from runner_shell.git.repo import Repo


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
) -> FileCommit:
    """Commit on `branch` (at `base`) the base's tree with `changes` and `runner_files`
    (path, bytes or text to store as UTF-8) applied. GitError when git fails or the branch moved.

    One `git fast-import` writes the tree and the commit (runner files up to a size inline,
    larger ones stored by `hash-object` first); one `update-ref` moves the branch from the base."""
    large = [index for index, (_, data) in enumerate(runner_files) if _large(data)]
    stored: dict[int, str] = {}
    if large:
        with BlobWriter(repo.root, repo.git_path(BLOBS_DIR)) as blobs:
            for index in large:
                blobs.add(runner_files[index][1])
            stored = dict(zip(large, blobs.write(), strict=True))
    kept = [Change(runner_files[i][0], FILE_MODE, oid) for i, oid in stored.items()]
    inline = [file for index, file in enumerate(runner_files) if index not in stored]
    imported = import_commit(repo, base, [*changes, *kept], inline, repo.identity(), message)
    commit, sent = imported.commit, iter(imported.blobs)
    oids = tuple(stored[i] if i in stored else next(sent) for i in range(len(runner_files)))
    subject = message.splitlines()[0] if message else ""
    _git(repo, ["update-ref", "-m", f"runner: {subject}", f"refs/heads/{branch}", commit, base])
    follow_commit(repo, base, commit)
    return FileCommit(commit, oids)


def commit_attempt(repo: Repo, attempt: AttemptCommit) -> str:
    """The files of an iteration not judged a pass as a commit on top of the commit its
    checkout started from, on the attempt's own ref (set anew: a recovery makes it again);
    the run's branch, index and work tree are not touched. GitError when git fails."""
    imported = import_commit(
        repo, attempt.base, attempt.changes, (), repo.identity(), attempt.message
    )
    commit = imported.commit
    subject = attempt.message.splitlines()[0]
    _git(repo, ["update-ref", "-m", subject, attempt.ref, commit])
    return commit


def _large(data: bytes | str) -> bool:
    return len(data) > INLINE_LIMIT_BYTES


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
