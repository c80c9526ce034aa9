"""`runner loop` as a command (and `runner demo`'s loop): the night loop started at the run's
next iteration, with its live progress line on a terminal.

Draws the progress line the core words (runner_core.views.progress) on stderr, ticking once a
second while the agent runs, with the agent's new output lines under it (read from the run's
`events.jsonl`, worded as `runner follow` words them); wipes it before each `loop:` line.
Never decides what the loop does next.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TextIO

import typer

from runner_core.loop.events import EventType
from runner_core.views.follow import event_text
from runner_core.views.progress import progress_head, ticking_line
from runner_core.views.text import terminal_text
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.loop.night_loop import LoopRun, run_night_loop
from runner_shell.loop.parallel_loop import run_parallel_loop
from runner_shell.sandbox.status import sandbox_at_start
from runner_shell.store.event_log import EventLogRefused, EventTail
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state, load_tree

# How often the live line redraws its elapsed time and looks for new agent output.
TICK_SECS = 0.25


def _progress_head(paths: RunnerPaths) -> str | None:
    try:
        state, config, tree = load_run_state(paths), load_config(paths), load_tree(paths)
    except UserFacingError:
        return None  # the step itself reports what is wrong
    return progress_head(state.next_iter, config.max_iterations, tree)


def run_loop(
    paths: RunnerPaths,
    repo: Repo,
    prompt_budget: int,
    emit: Callable[[str], None],
    live: LiveProgress | None = None,
    max_steps: int | None = None,
) -> int:
    """Step until complete (0), stuck (3), the iteration limit (1), a budget (1), or
    `[loop] max_consecutive_runner_errors` runner errors in a row (1); a signal: 128 + it.

    `live`, when given, is a terminal's live line: its head is read before each step, and it
    shows the agent output of the run's events from now on.
    With `max_steps`, the loop also stops (0) once it has taken that many steps.
    """
    state = load_run_state(paths)
    sandbox_at_start(load_config(paths), lambda line: print(line, file=sys.stderr, flush=True))
    if live is not None and state.run_id is not None:
        live.watch(paths.events_log(state.run_id))

    def show() -> None:
        if live is not None:
            live.show(_progress_head(paths))

    run = LoopRun(paths, repo, prompt_budget, emit, state.next_iter)
    # More than one slot, or jobs on other machines: the jobs and their merge queue
    # (docs/parallel.md, docs/temporal.md).
    config = load_config(paths)
    spread = config.parallel_slots > 1 or config.executor.kind != "local"
    parallel = spread and state.run_id is not None
    loop = run_parallel_loop if parallel else run_night_loop
    return loop(run, show if live is not None else None, max_steps)


class LiveProgress:
    """`runner loop`'s progress line on a terminal: drawn on stderr with `\\r`, redrawn by a
    ticker thread as its elapsed time changes, with the agent's output lines printed above it
    (unless `quiet`); wiped before each `loop:` line and at the end. Disabled, `emit` is plain
    `typer.echo` and nothing else is drawn, so the output is byte-identical to a loop without
    it."""

    def __init__(self, enabled: bool, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.enabled = enabled
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.drawn = False
        self.head: str | None = None
        self.began = time.monotonic()
        self.tail: EventTail | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def watch(self, events_log: Path) -> None:
        """Show the agent output appended to `events_log` from now on."""
        if not self.quiet:
            self.tail = EventTail.at_end(events_log)

    def show(self, head: str | None) -> None:
        with self._lock:
            self.head = head
            self._draw()

    def _draw(self) -> None:
        if self.head is None:
            return
        line = ticking_line(self.head, time.monotonic() - self.began)
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.drawn = True

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def emit(self, line: str) -> None:
        with self._lock:
            self._clear()
            self.head = None  # drawn again before the next step, with its own head
            typer.echo(line)

    def _agent_lines(self) -> tuple[str, ...]:
        if self.tail is None:
            return ()
        try:
            events, _, _ = self.tail.read()
        except (EventLogRefused, OSError):
            return ()  # the step reports a refused events.jsonl
        return tuple(
            terminal_text(line)
            for event in events
            if event.type is EventType.AGENT_OUTPUT
            for line in event_text(event)
        )

    def _tick(self) -> None:
        shown = None
        while not self._stop.wait(TICK_SECS):
            output = self._agent_lines()
            with self._lock:
                second = int(time.monotonic() - self.began)
                if not output and (self.head is None or second == shown):
                    continue
                if output:
                    self._clear()
                    self.stream.write("".join(f"{line}\n" for line in output))
                self._draw()
                shown = second

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        self.clear()
