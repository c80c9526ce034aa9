"""Writing one iteration's record and its commit: the final write-set in its order (meta →
output → guard.log → snapshots), every file atomically, then run_state and the commit,
advancing the journal so a kill at any point is recoverable, then the logs' archive.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from runner_core.iteration.effects import Commit, FileWrite, Place
from runner_core.run.outside_change import GitHead
from runner_core.tree.serialization import dumps_tree
from runner_shell.git import log_archive
from runner_shell.git.file_commit import commit_attempt, commit_files
from runner_shell.git.repo import Repo, StagingGuard
from runner_shell.step.lock_and_journal import clear_journal, write_journal
from runner_shell.store.files import (
    READ_ONLY,
    atomic_write_bytes,
    atomic_write_text,
    link_if_sha256,
    remove_file_within,
    rename_within,
    sync_directories,
)
from runner_shell.store.layout import Places

# The tree snapshots of an iteration directory (runner_core.iteration.record).
SNAPSHOT_NAMES = ("tree.before.json", "tree.after.json")


def commit_iteration(
    paths: Places,
    repo: Repo,
    run_id: str,
    iter_dir: Path,
    commit: Commit,
    guard: StagingGuard | None = None,
    base: GitHead | None = None,
    hold: AbstractContextManager[object] | None = None,
    on_committed: Callable[[], None] | None = None,
) -> None:
    """Carry out the final write-set in its order, commit (the files of an iteration not
    judged a pass on its attempt's ref first), then archive the iteration's logs on
    `refs/runner/logs/<run>`; the journal tracks each phase and is cleared only then.

    `hold` (the parallel loop's state lock) is held from the first write until the commit is
    made and `on_committed` has run, not while the logs are archived: a reader holding it
    never sees the state files, the branch and the work tree disagree (git rewrites the work
    tree's files in place).

    With `base` (the branch and commit the iteration started from), the commit is built from
    files: the base's tree, the changes imported from the scratch checkout and the runner's
    state files; the run's work tree is never staged. Raises GitError when the commit fails
    and ArchiveError when the archive does: the iteration is logged, and 'runner recover'
    finishes it.
    """
    with contextlib.nullcontext() if hold is None else hold:
        write_journal(repo, commit.writing)
        run_dir = paths.run_dir(run_id)
        bases = {Place.STATE: paths.state_dir, Place.ITERATION: iter_dir, Place.RUN: run_dir}
        written = [_write(bases, run_dir, iter_dir, file) for file in commit.files]
        sync_directories(written)  # once each, before the journal says they are all there
        write_journal(repo, commit.committing)
        committed: dict[str, str] = {}
        if commit.attempt is not None:  # before the run's commit: a kill between keeps both
            commit_attempt(repo, commit.attempt)
        if base is not None and base.branch is not None:
            state = [file for file in commit.files if file.place is Place.STATE]
            state_dir = paths.relative(bases[Place.STATE])
            runner_files = [(f"{state_dir}/{f.name}", f.data) for f in state]
            blobs = commit_files(
                repo, base.branch, base.sha, commit.changes, runner_files, commit.message
            ).blobs
            committed = _committed_snapshots(commit.files, state, blobs)
        else:
            repo.commit_all(commit.message, guard)
        if on_committed is not None:
            on_committed()
    iteration = commit.committing.iteration
    if log_archive.archive_after_commit(paths.root, run_id, iteration, iter_dir, committed):
        _drop_archived_snapshots(paths, iter_dir.parent / str(iteration - 1))
    clear_journal(repo)


def _drop_archived_snapshots(paths: Places, directory: Path) -> None:
    """The previous iteration's tree snapshots go from its directory once the archive holds
    them: only the last iteration keeps a copy of the tree on disk (the next one links its
    tree.before.json to it), the views read the others from the archive. Never through a
    symlink; a snapshot already gone is left gone."""
    for name in SNAPSHOT_NAMES:
        with contextlib.suppress(OSError, ValueError):
            remove_file_within(paths.root, f"{paths.relative(directory)}/{name}")


def _committed_snapshots(
    files: Sequence[FileWrite], state: Sequence[FileWrite], blobs: Sequence[str]
) -> dict[str, str]:
    """The iteration files written from the very text of a state file just committed (the
    tree snapshot after is tree.json's), by name, with that blob's id: the log archive names the
    blob instead of reading and sending the file again."""
    by_text = {id(file.data): blob for file, blob in zip(state, blobs, strict=True) if file.data}
    return {
        file.name: by_text[id(file.data)]
        for file in files
        if file.place is Place.ITERATION
        and file.rename_from is None
        and file.fallback_tree is None
        and id(file.data) in by_text
    }


def _write(bases: Mapping[Place, Path], run_dir: Path, iter_dir: Path, file: FileWrite) -> Path:
    """Write `file` in the directory `bases` gives its place; the directory whose entry
    changed, for the caller to sync."""
    target = bases[file.place] / file.name
    if file.rename_from is not None:
        rename_within(iter_dir, file.rename_from, file.name)
        return iter_dir
    mode = READ_ONLY if file.read_only else None
    link, sha256 = file.link_from, file.link_sha256
    if (
        link is not None
        and sha256 is not None
        and link_if_sha256(run_dir / link, target, sha256, mode)
    ):
        return target.parent
    data = file.data
    if file.fallback_tree is not None:  # the snapshot to link to is gone or was changed
        data = dumps_tree(file.fallback_tree)
    if isinstance(data, str):
        atomic_write_text(target, data, mode, sync_directory=False)
    else:
        atomic_write_bytes(target, data, mode, sync_directory=False)
    return target.parent
