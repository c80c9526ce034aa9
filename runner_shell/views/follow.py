"""`runner follow` and the overnight lines of `runner status` / `runner report`.

Follow replays a run's recorded events (the current loop's, by default), then prints each new
one as it is appended, from another terminal, and ends when the loop does (its last event says
so, or no runner holds the lock any more); before any loop, and between two (the last one
stopped short of `complete`), it waits for the next one. Which events it
replays and what each line says are decided in `runner_core.views.follow`; this module reads
files and prints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from runner_core.iteration.recovery import Journal, running_log_names
from runner_core.loop.events import Event, event_line
from runner_core.loop.policy import ends_the_loop
from runner_core.views.follow import (
    STATUS_TAIL_LINES,
    CurrentLoop,
    Replay,
    ended_loop_word,
    followed_text,
    loop_has_begun,
    replayed,
    running_lines,
    waiting_for_loop_line,
    waiting_for_next_loop_line,
)
from runner_core.views.text import terminal_text
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.event_sink import events_path
from runner_shell.step.lock_and_journal import lock_held
from runner_shell.store.event_log import EventTail, follow_tail
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
    replay: Replay | None = None,
) -> None:
    """Print the replayed events, then each new one until the loop ends."""
    run = run_id or load_run_state(paths).run_id
    if run is None:
        raise UserFacingError("no run to follow (run 'runner start', or pass --run RUN_ID)")

    in_flight: list[frozenset[int]] = [frozenset()]

    def show(event: Event) -> None:
        in_flight[0], lines = followed_text(in_flight[0], event)
        if as_json:
            echo(event_line(event).rstrip("\n"))
        else:
            for line in lines:
                echo(terminal_text(line))

    tail = EventTail(events_path(paths, run))
    recorded, warnings, _ = tail.read()
    for warning in warnings:
        warn(warning)
    for event in replayed(recorded, replay or CurrentLoop()):
        show(event)
    begun = [loop_has_begun(recorded)]
    ended = ended_loop_word(recorded)
    if not begun[0]:
        print(waiting_for_loop_line(run), file=sys.stderr, flush=True)
    elif ended is not None:
        # Between two loops (the last one stopped, `runner loop` may go on): wait for the next.
        begun[0] = False
        print(waiting_for_next_loop_line(run, ended), file=sys.stderr, flush=True)

    def stopped() -> bool:
        return begun[0] and not lock_held(repo)

    for event in follow_tail(tail, stop=stopped, on_warning=warn):
        begun[0] = begun[0] or loop_has_begun((event,))
        show(event)
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
