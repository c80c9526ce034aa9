"""The iteration log on disk: writing one iteration's record, reading a run's history.

Writes in its order (meta → output → guard.log → snapshots), every file atomically, then
run_state and the commit, advancing the journal so a kill at any point is recoverable. Reading
rebuilds the execution history from the iteration directories alone; a damaged or missing
file is reported and skipped, never fatal.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import attrs

from runner_shell.store.files import (
    READ_ONLY,
    atomic_write_bytes,
    atomic_write_text,
    link_if_sha256,
    read_bytes_capped,
    read_bytes_capped_at,
    rename_within,
    sync_directories,
)
from runner_shell.store.layout import EVENTS_FILE, RunnerPaths

if TYPE_CHECKING:  # the writing half's; the views read history without importing them
    # The records' modules (pyrsistent, the guard's ratchet, the state update) are imported
    # where a history is read: `utc_now` and the writers are imported by commands that read
    # none (`runner validate`, through the sandbox's proxy).
    from runner_core.history.records import ExecutionHistory, ExecutionRecord
    from runner_core.iteration.effects import Commit, FileWrite
    from runner_core.iteration.git_drift import GitHead
    from runner_shell.git.repo import Repo, StagingGuard

# A meta.json is a few hundred bytes; a larger one is damaged (or planted) and skipped unread.
META_MAX_BYTES = 1024 * 1024


def commit_iteration(
    paths: RunnerPaths,
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
    from runner_core.iteration.effects import Place
    from runner_shell.git.file_commit import commit_attempt, commit_files
    from runner_shell.git.log_archive import archive_after_commit
    from runner_shell.step.lock_and_journal import clear_journal, write_journal

    with contextlib.nullcontext() if hold is None else hold:
        write_journal(repo, commit.writing)
        written = [_write(paths, paths.run_dir(run_id), iter_dir, file) for file in commit.files]
        sync_directories(written)  # once each, before the journal says they are all there
        write_journal(repo, commit.committing)
        committed: dict[str, str] = {}
        if commit.attempt is not None:  # before the run's commit: a kill between keeps both
            commit_attempt(repo, commit.attempt)
        if base is not None and base.branch is not None:
            state = [file for file in commit.files if file.place is Place.STATE]
            runner_files = [(paths.relative(paths.state_dir / f.name), f.data) for f in state]
            blobs = commit_files(
                repo, base.branch, base.sha, commit.changes, runner_files, commit.message
            ).blobs
            committed = _committed_snapshots(commit.files, state, blobs)
        else:
            repo.commit_all(commit.message, guard)
        if on_committed is not None:
            on_committed()
    archive_after_commit(paths.root, run_id, commit.committing.iteration, iter_dir, committed)
    clear_journal(repo)


def _committed_snapshots(
    files: Sequence[FileWrite], state: Sequence[FileWrite], blobs: Sequence[str]
) -> dict[str, str]:
    """The iteration files written from the very text of a state file just committed (the
    tree snapshot after is tree.json's), by name, with that blob's id: the log archive names the
    blob instead of reading and sending the file again."""
    from runner_core.iteration.effects import Place

    by_text = {id(file.data): blob for file, blob in zip(state, blobs, strict=True) if file.data}
    return {
        file.name: by_text[id(file.data)]
        for file in files
        if file.place is Place.ITERATION
        and file.rename_from is None
        and file.fallback_tree is None
        and id(file.data) in by_text
    }


def _write(paths: RunnerPaths, run_dir: Path, iter_dir: Path, file: FileWrite) -> Path:
    """Write `file`; the directory whose entry changed, for the caller to sync."""
    from runner_core.iteration.effects import Place
    from runner_core.tree.serialization import dumps_tree

    base = {Place.STATE: paths.state_dir, Place.ITERATION: iter_dir, Place.RUN: run_dir}
    target = base[file.place] / file.name
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


def utc_now() -> str:
    """ISO-8601 UTC with milliseconds, the timestamps of meta.json."""
    moment = datetime.datetime.now(datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def count_executions(paths: RunnerPaths, run_id: str) -> dict[str, int]:
    """Each node's recorded iterations, for a run state written before it kept the counts."""
    history, _ = load_history(paths, run_id)
    counts: dict[str, int] = {}
    for record in history.records:
        counts[record.node_id] = counts.get(record.node_id, 0) + 1
    return counts


# ---------------------------------------------------------------- reading it back


def _is_iteration_name(name: str) -> bool:
    return name.isascii() and name.isdigit() and str(int(name)) == name


def _is_iteration_dir(entry: os.DirEntry[str]) -> bool:
    # Not following symlinks: d_type answers it without a stat() on most file systems.
    return _is_iteration_name(entry.name) and entry.is_dir(follow_symlinks=False)


def _is_events_log(entry: os.DirEntry[str]) -> bool:
    return entry.name == EVENTS_FILE and entry.is_file(follow_symlinks=False)


def _is_skipped_silently(name: str) -> bool:
    return ".interrupted-" in name or name.startswith(".")


@attrs.frozen(slots=True)
class RunListing:
    """What one listing of a run's directory found: its iteration directories (number, name)
    by number, and the names of the entries that are neither one nor the events log, sorted."""

    iterations: tuple[tuple[int, str], ...] = ()
    unexpected: tuple[str, ...] = ()


def list_run(paths: RunnerPaths, run_id: str) -> RunListing:
    """The run's directory listed once; nothing when it is missing or a symlink."""
    run_dir = paths.run_dir(run_id)
    try:
        if not stat.S_ISDIR(os.lstat(run_dir).st_mode):
            return RunListing()
    except OSError:
        return RunListing()
    with os.scandir(run_dir) as entries:
        found = [(entry.name, _is_iteration_dir(entry), _is_events_log(entry)) for entry in entries]
    iterations = sorted((int(name), name) for name, iteration, _ in found if iteration)
    unexpected = sorted(
        name
        for name, iteration, events in found
        if not iteration and not events and not _is_skipped_silently(name)
    )
    return RunListing(tuple(iterations), tuple(unexpected))


def iteration_dirs(paths: RunnerPaths, run_id: str) -> list[tuple[int, Path]]:
    """The run's iteration directories by number; anything else there is skipped."""
    run_dir = paths.run_dir(run_id)
    return [(number, run_dir / name) for number, name in list_run(paths, run_id).iterations]


def unexpected_entries(paths: RunnerPaths, run_id: str) -> tuple[str, ...]:
    """A warning for each entry of the run's directory that is not an iteration directory."""
    return _unexpected_lines(paths, run_id, list_run(paths, run_id))


def _unexpected_lines(paths: RunnerPaths, run_id: str, listing: RunListing) -> tuple[str, ...]:
    run_dir = paths.run_dir(run_id)
    return tuple(
        f"{paths.relative(run_dir / name)}: not an iteration directory; skipped"
        for name in listing.unexpected
    )


# What a long-lived reader (`runner serve`) keeps between two readings of a run's history:
# each iteration's record with the stamp of the meta.json it was read from.
RecordMemo: TypeAlias = "dict[tuple[str, str], tuple[tuple[int, ...], ExecutionRecord]]"


def load_history(
    paths: RunnerPaths, run_id: str, memo: RecordMemo | None = None
) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """The run's history from its meta.json files, and a line for each one that was skipped.

    One listing of the run's directory and one read of each meta.json: at thousands of
    iterations this is what `runner status`, `history` and `report` spend their time on. With
    `memo`, a meta.json whose stamp (inode, size, modification and change times) is the one
    its record was read from is not read again, and `memo` keeps exactly this reading's records.
    """
    from runner_core.history.records import ExecutionHistory

    listing = list_run(paths, run_id)
    run_dir = paths.run_dir(run_id)
    records: list[ExecutionRecord] = []
    problems: list[str] = list(_unexpected_lines(paths, run_id, listing))
    kept: RecordMemo = {}
    with _directory_fd(run_dir) as run_fd:
        for number, name in listing.iterations:
            stamp = _meta_stamp(run_fd, name) if memo is not None else None
            known = memo.get((run_id, name)) if memo is not None else None
            if stamp is not None and known is not None and known[0] == stamp:
                found: ExecutionRecord | str = known[1]
            else:
                found = _record_or_problem(paths, run_dir, run_id, run_fd, number, name)
            if isinstance(found, str):
                problems.append(found)
            else:
                records.append(found)
                if stamp is not None:
                    kept[(run_id, name)] = (stamp, found)
    if memo is not None:
        memo.clear()
        memo.update(kept)
    return ExecutionHistory(tuple(records)), tuple(problems)


def _meta_stamp(directory_fd: int | None, name: str) -> tuple[int, ...] | None:
    """What tells one meta.json from the next, without reading it; None when it cannot be
    stat'ed (it is then read, and its error reported, as without a memo)."""
    if directory_fd is None:
        return None
    try:
        info = os.stat(f"{name}/meta.json", dir_fd=directory_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@contextlib.contextmanager
def _directory_fd(directory: Path) -> Iterator[int | None]:
    """The directory held open, to read its files by name; None when it cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _meta_bytes(directory_fd: int | None, run_dir: Path, name: str) -> bytes:
    """The iteration's meta.json, read through the run directory's descriptor (no path built
    or resolved per record); on any error, read again by path so the error names it as ever."""
    if directory_fd is not None:
        try:
            return read_bytes_capped_at(directory_fd, f"{name}/meta.json", META_MAX_BYTES)
        except OSError:
            pass
    return read_bytes_capped(run_dir / name / "meta.json", META_MAX_BYTES)


def _record_or_problem(
    paths: RunnerPaths, run_dir: Path, run_id: str, run_fd: int | None, number: int, name: str
) -> ExecutionRecord | str:
    """The record of iteration `number` (directory `name`), else the line saying why not."""
    from runner_core.history.records import DamagedRecord, record_from_meta

    try:
        data = _meta_bytes(run_fd, run_dir, name)
        record = record_from_meta(json.loads(data.decode("utf-8")))
    except FileNotFoundError:
        return f"{paths.relative(run_dir / name / 'meta.json')}: missing (iteration interrupted?)"
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = str(error) if isinstance(error, DamagedRecord) else f"unreadable: {error}"
        return f"{paths.relative(run_dir / name / 'meta.json')}: {reason}"
    # The listing holds each number once (the name is its canonical form).
    if record.iteration != number or record.run_id != run_id:
        where = paths.relative(run_dir / name / "meta.json")
        return f"{where}: names run {record.run_id} iter {record.iteration}"
    return record


def known_runs(paths: RunnerPaths) -> tuple[str, ...]:
    if not paths.iterations_dir.is_dir():
        return ()
    return tuple(
        sorted(
            entry.name
            for entry in paths.iterations_dir.iterdir()
            if entry.is_dir() and not entry.is_symlink()
        )
    )
