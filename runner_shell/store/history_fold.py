"""A long-lived reader's history of one run, folded forward (`runner serve`): at each change
only the new iteration directories, and those that had no record yet, are read and added to
the records kept, instead of every meta.json of the run.

The fold trusts a recorded iteration's meta.json to stay as it was: the runner writes it once,
at the iteration's end (`runner recover` writes the one an interrupted iteration lacks, which
had no record). What says otherwise falls back to a whole reading (`load_history`, its memo
sparing the unchanged files): an iteration directory gone or replaced (another inode under
its name), another run, a run directory that cannot be listed, and a whole reading older than
FULL_READ_SECS, so a hand edit of an old meta.json is seen too.
"""

from __future__ import annotations

import operator
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from runner_shell.store import iteration_log
from runner_shell.store.iteration_log import (
    RecordMemo,
    RunListing,
    _directory_fd,
    _is_events_log,
    _is_iteration_dir,
    _is_skipped_silently,
    _unexpected_lines,
    load_history,
)
from runner_shell.store.layout import RunnerPaths

if TYPE_CHECKING:
    from runner_core.history.records import ExecutionHistory, ExecutionRecord

FULL_READ_SECS = 30.0
_NAME = operator.attrgetter("name")
_INODE = operator.methodcaller("inode")
# A directory changed this close to its stat may change again within the same timestamp: its
# stamp is not trusted, and it is listed again at the next reading (as git's racy index).
RACY_NS = 2 * 10**9


def _dir_stamp(directory: Path) -> tuple[int, ...] | None:
    """What tells one state of a directory's entries from the next; None when it is not a
    directory (a missing run, a symlink) or was changed too recently to tell."""
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or time.time_ns() - info.st_mtime_ns < RACY_NS:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


@attrs.frozen
class _Listing:
    """A run directory's entries by name, and each one's inode (built by C loops: a run of
    10k iterations is listed at each new one)."""

    entries: dict[str, os.DirEntry[str]]
    inodes: dict[str, int]


def _listed(run_dir: Path) -> _Listing | None:
    try:
        with os.scandir(run_dir) as found:
            entries = list(found)
    except OSError:
        return None
    names = list(map(_NAME, entries))
    return _Listing(
        dict(zip(names, entries, strict=True)), dict(zip(names, map(_INODE, entries), strict=True))
    )


@attrs.define
class HistoryFold:
    """The records of one run's iteration directories, kept between two readings."""

    clock: Callable[[], float] = time.monotonic
    run_id: str | None = None
    stamp: tuple[int, ...] | None = None  # the run directory's, as last listed
    inodes: dict[str, int] = attrs.field(factory=dict)  # each iteration directory listed
    # Those listed without a record yet (in progress, or unreadable): what a fold reads again.
    pending: set[str] = attrs.field(factory=set)
    unexpected: tuple[str, ...] = ()
    history: ExecutionHistory | None = None
    read_at: float = 0.0  # the last whole reading's
    memo: RecordMemo = attrs.field(factory=dict)  # the whole reading's (load_history)
    folds: int = 0  # readings that read only what was new, for the tests

    def read(self, paths: RunnerPaths, run_id: str) -> tuple[ExecutionHistory, tuple[str, ...]]:
        """The run's history and its problems, as `load_history(paths, run_id)` gives them."""
        run_dir = paths.run_dir(run_id)
        stamp = _dir_stamp(run_dir)  # before the listing: a change after it is seen next time
        now = self.clock()
        if self.history is None or run_id != self.run_id or now - self.read_at >= FULL_READ_SECS:
            return self._whole(paths, run_id, stamp, now)
        if stamp is None or stamp != self.stamp:
            found = _listed(run_dir)
            # Every directory listed before, under its name and inode still (compared in C).
            if found is None or not self.inodes.items() <= found.inodes.items():
                return self._whole(paths, run_id, stamp, now)
            self._add_listed(found)
        self.stamp = stamp
        self.folds += 1
        return self._fold(paths, run_id)

    def _whole(
        self, paths: RunnerPaths, run_id: str, stamp: tuple[int, ...] | None, now: float
    ) -> tuple[ExecutionHistory, tuple[str, ...]]:
        history, problems = load_history(paths, run_id, self.memo)
        found = _listed(paths.run_dir(run_id))
        self.run_id, self.history, self.read_at, self.inodes = run_id, history, now, {}
        self.stamp = stamp if found is not None else None
        self.pending, self.unexpected = set(), ()
        if found is not None:
            self._add_listed(found)
        self.pending.difference_update(str(record.iteration) for record in history.records)
        return history, problems

    def _add_listed(self, found: _Listing) -> None:
        """Note the listing's new iteration directories (read by `_fold`) and its other
        entries, as `list_run` tells them apart."""
        unexpected = []
        for name in sorted(found.entries.keys() - self.inodes.keys()):
            entry = found.entries[name]
            if _is_iteration_dir(entry):
                self.inodes[name] = entry.inode()
                self.pending.add(name)
            elif not _is_events_log(entry) and not _is_skipped_silently(name):
                unexpected.append(name)
        self.unexpected = tuple(unexpected)

    def _fold(self, paths: RunnerPaths, run_id: str) -> tuple[ExecutionHistory, tuple[str, ...]]:
        """Read the iteration directories without a record and add the records found."""
        from runner_core.history.records import ExecutionHistory

        assert self.history is not None
        run_dir = paths.run_dir(run_id)
        problems = list(_unexpected_lines(paths, run_id, RunListing((), self.unexpected)))
        added: list[ExecutionRecord] = []
        with _directory_fd(run_dir) as run_fd:
            for number, name in sorted((int(name), name) for name in self.pending):
                found = iteration_log._record_or_problem(
                    paths, run_dir, run_id, run_fd, number, name
                )
                if isinstance(found, str):
                    problems.append(found)
                else:
                    added.append(found)
                    self.pending.discard(name)
        history = self.history
        last = history.records[-1].iteration if history.records else 0
        if all(record.iteration > last for record in added):
            self.history = history.extended(added)
        else:  # a parallel run's job that ended after a later one: its place is earlier
            self.history = ExecutionHistory.of((*history.records, *added))
        return self.history, tuple(problems)


def same_records(old: ExecutionHistory, new: ExecutionHistory) -> bool:
    """The very same record objects (a fold's), in the same order: what is drawn from one
    history stays drawn for the other."""
    return len(old.records) == len(new.records) and all(
        a is b for a, b in zip(old.records, new.records, strict=True)
    )
