"""`runner follow` and the overnight lines of `runner status` / `runner report`.

Follow prints a run's events as they are appended, from another terminal, and ends when the
loop does (its last event says so, or no runner holds the lock any more). What each line
says is decided in `runner_core.views.follow`; this module reads files and prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from runner_core.iteration.recovery import Journal, running_log_names
from runner_core.loop.events import event_line
from runner_core.loop.policy import ends_the_loop
from runner_core.views.follow import STATUS_TAIL_LINES, event_text, running_lines
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.loop.event_sink import events_path
from runner_shell.step.lock_and_journal import lock_held
from runner_shell.store.event_log import follow
from runner_shell.store.files import open_regular
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state

# How much of the end of a running log `runner status` reads for its last lines.
_TAIL_BYTES = 16 * 1024


def follow_run(
    paths: RunnerPaths,
    repo: Repo,
    run_id: str | None,
    as_json: bool,
    echo: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """Print the run's events until the loop ends."""
    run = run_id or load_run_state(paths).run_id
    if run is None:
        raise UserFacingError("no run to follow (run 'runner start', or pass --run RUN_ID)")
    seen = [False]

    def stopped() -> bool:
        return seen[0] and not lock_held(repo)

    for event in follow(events_path(paths, run), stop=stopped, on_warning=warn):
        seen[0] = True
        if as_json:
            echo(event_line(event).rstrip("\n"))
        else:
            for line in event_text(event):
                echo(line)
        if ends_the_loop(event):
            return


def _log_tail(path: Path) -> tuple[str, ...]:
    try:
        with open_regular(path) as stream:  # an agent's FIFO there never blocks `runner status`
            size = stream.seek(0, 2)
            stream.seek(max(0, size - _TAIL_BYTES))
            data = stream.read()
    except OSError:
        return ()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return tuple(line for line in lines if line.strip())[-STATUS_TAIL_LINES:]


def _running_log(paths: RunnerPaths, journal: Journal) -> Path:
    """Of the logs the iteration writes, the one written last (the guard's once it started)."""
    iter_dir = paths.iter_dir(journal.run_id, journal.iteration)
    agent_log, guard_log = (iter_dir / name for name in running_log_names(journal))
    try:
        started = guard_log.lstat().st_mtime_ns >= agent_log.lstat().st_mtime_ns
    except OSError:
        started = os.path.lexists(guard_log)
    return guard_log if started else agent_log


def running_status_lines(paths: RunnerPaths, journal: Journal | None) -> tuple[str, ...]:
    """`runner status` for an iteration in progress: its elapsed time and its log's last lines."""
    if journal is None:
        return ()
    tail = _log_tail(_running_log(paths, journal))
    return running_lines(journal, datetime.now(UTC), tail)
