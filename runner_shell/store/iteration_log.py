"""The iteration log on disk: writing one iteration's record, reading a run's history.

Writes in its order (meta → output → guard.log → snapshots), every file atomically, then
run_state and the commit, advancing the journal so a kill at any point is recoverable. Reading
rebuilds the execution history from the iteration directories alone; a damaged or missing
file is reported and skipped, never fatal.
"""

from __future__ import annotations

import datetime
import functools
import json
from pathlib import Path

from runner_core.history.records import (
    DamagedRecord,
    ExecutionHistory,
    ExecutionRecord,
    record_from_meta,
)
from runner_core.iteration.effects import Commit, FileWrite, Place
from runner_core.iteration.git_drift import GitHead
from runner_core.tree.serialization import dumps_tree
from runner_shell.git.file_commit import commit_files
from runner_shell.git.log_archive import archive_after_commit
from runner_shell.git.repo import Repo, StagingGuard
from runner_shell.scratch.slots import copy_base_index
from runner_shell.step.lock_and_journal import clear_journal, write_journal
from runner_shell.store.files import (
    READ_ONLY,
    atomic_write_bytes,
    atomic_write_text,
    link_if_sha256,
    read_bytes_capped,
    rename_within,
)
from runner_shell.store.layout import EVENTS_FILE, RunnerPaths

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
) -> None:
    """Carry out the final write-set in its order, commit, then archive the iteration's logs
    on `refs/runner/logs/<run>`; the journal tracks each phase and is cleared only then.

    With `base` (the branch and commit the iteration started from), the commit is built from
    files: the base's tree, the changes imported from the scratch checkout and the runner's
    state files; the run's work tree is never staged. Raises GitError when the commit fails
    and ArchiveError when the archive does: the iteration is logged, and 'runner recover'
    finishes it.
    """
    write_journal(repo, commit.writing)
    for file in commit.files:
        _write(paths, paths.run_dir(run_id), iter_dir, file)
    write_journal(repo, commit.committing)
    if base is not None and base.branch is not None:
        runner_files = [
            (paths.relative(paths.state_dir / file.name), _bytes(file))
            for file in commit.files
            if file.place is Place.STATE
        ]
        base_index = functools.partial(copy_base_index, repo, base.sha)
        commit_files(
            repo, base.branch, base.sha, commit.changes, runner_files, commit.message, base_index
        )
    else:
        repo.commit_all(commit.message, guard)
    archive_after_commit(paths.root, run_id, commit.committing.iteration, iter_dir)
    clear_journal(repo)


def _bytes(file: FileWrite) -> bytes:
    return file.data.encode("utf-8") if isinstance(file.data, str) else file.data


def _write(paths: RunnerPaths, run_dir: Path, iter_dir: Path, file: FileWrite) -> None:
    base = {Place.STATE: paths.state_dir, Place.ITERATION: iter_dir, Place.RUN: run_dir}
    target = base[file.place] / file.name
    if file.rename_from is not None:
        rename_within(iter_dir, file.rename_from, file.name)
        return
    mode = READ_ONLY if file.read_only else None
    link, sha256 = file.link_from, file.link_sha256
    if (
        link is not None
        and sha256 is not None
        and link_if_sha256(run_dir / link, target, sha256, mode)
    ):
        return
    data = file.data
    if file.fallback_tree is not None:  # the snapshot to link to is gone or was changed
        data = dumps_tree(file.fallback_tree)
    if isinstance(data, str):
        atomic_write_text(target, data, mode)
    else:
        atomic_write_bytes(target, data, mode)


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


def _is_iteration_dir(entry: Path) -> bool:
    name = entry.name
    return (
        name.isascii()
        and name.isdigit()
        and str(int(name)) == name
        and entry.is_dir()
        and not entry.is_symlink()
    )


def _is_events_log(entry: Path) -> bool:
    return entry.name == EVENTS_FILE and entry.is_file() and not entry.is_symlink()


def iteration_dirs(paths: RunnerPaths, run_id: str) -> list[tuple[int, Path]]:
    """The run's iteration directories by number; anything else there is skipped."""
    run_dir = paths.run_dir(run_id)
    if not run_dir.is_dir() or run_dir.is_symlink():
        return []
    found = [(int(entry.name), entry) for entry in run_dir.iterdir() if _is_iteration_dir(entry)]
    return sorted(found)


def unexpected_entries(paths: RunnerPaths, run_id: str) -> tuple[str, ...]:
    """A warning for each entry of the run's directory that is not an iteration directory."""
    run_dir = paths.run_dir(run_id)
    if not run_dir.is_dir() or run_dir.is_symlink():
        return ()
    return tuple(
        f"{paths.relative(entry)}: not an iteration directory; skipped"
        for entry in sorted(run_dir.iterdir())
        if not _is_iteration_dir(entry)
        and not _is_events_log(entry)
        and ".interrupted-" not in entry.name
        and not entry.name.startswith(".")
    )


def load_history(paths: RunnerPaths, run_id: str) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """The run's history from its meta.json files, and a line for each one that was skipped."""
    records: list[ExecutionRecord] = []
    problems: list[str] = list(unexpected_entries(paths, run_id))
    seen: set[int] = set()
    for number, directory in iteration_dirs(paths, run_id):
        meta_path = directory / "meta.json"
        where = paths.relative(meta_path)
        try:
            data = read_bytes_capped(meta_path, META_MAX_BYTES)
            record = record_from_meta(json.loads(data.decode("utf-8")))
        except FileNotFoundError:
            problems.append(f"{where}: missing (iteration interrupted?)")
            continue
        except (OSError, UnicodeDecodeError, ValueError) as error:
            reason = str(error) if isinstance(error, DamagedRecord) else f"unreadable: {error}"
            problems.append(f"{where}: {reason}")
            continue
        if record.iteration != number or record.run_id != run_id or record.iteration in seen:
            problems.append(f"{where}: names run {record.run_id} iter {record.iteration}")
            continue
        seen.add(record.iteration)
        records.append(record)
    return ExecutionHistory.of(records), tuple(problems)


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
