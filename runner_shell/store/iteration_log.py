"""The iteration log on disk: reading a run's history back (writing one iteration's record is
`runner_shell.step.iteration_commit`'s).

Reading rebuilds the execution history from the iteration directories alone; a damaged or
missing file is reported and skipped, never fatal.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from runner_shell.store.files import (
    read_bytes_capped,
    read_bytes_capped_at,
)
from runner_shell.store.layout import EVENTS_FILE, RunnerPaths

if TYPE_CHECKING:  # the views read history without importing the records' modules at start
    from runner_core.history.records import DamagedRecord, ExecutionHistory, ExecutionRecord

# A meta.json is a few hundred bytes; a larger one is damaged (or planted) and skipped unread.
META_MAX_BYTES = 1024 * 1024


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


@functools.cache
def _record_reader() -> tuple[type[DamagedRecord], Callable[[Any], ExecutionRecord]]:
    """The records' reader and its error, imported with the first record read, once: an import
    statement per record costs a run of 10,000 iterations milliseconds."""
    from runner_core.history.records import DamagedRecord, record_from_meta

    return DamagedRecord, record_from_meta


def _record_or_problem(
    paths: RunnerPaths, run_dir: Path, run_id: str, run_fd: int | None, number: int, name: str
) -> ExecutionRecord | str:
    """The record of iteration `number` (directory `name`), else the line saying why not."""
    damaged_record, record_from_meta = _record_reader()
    try:
        data = _meta_bytes(run_fd, run_dir, name)
        record = record_from_meta(json.loads(data.decode("utf-8")))
    except FileNotFoundError:
        return f"{paths.relative(run_dir / name / 'meta.json')}: missing (iteration interrupted?)"
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = str(error) if isinstance(error, damaged_record) else f"unreadable: {error}"
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
