"""The overnight pieces of the shell: the run's event sink with its hooks, budgets, and signals.

`EventSink` appends the events the core decided to `events.jsonl` and fires their hooks (a
hook's failure is logged, never changes the run). `Interrupts` turns SIGINT, SIGTERM and SIGHUP
into an `Interrupted` raised inside an agent's or guard's run (whose process group is then
killed) or a wait; a second signal during the cleanup exits at once. Nothing here decides.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import Protocol

import attrs

from runner_core.history.records import ExecutionHistory, HistorySummary
from runner_core.loop.budget import BudgetUse, exhausted_budget
from runner_core.loop.events import (
    Event,
    EventOrigin,
    OutputPolicy,
    PendingOutput,
    add_output,
    agent_output,
    decide_output,
    hook_failed,
)
from runner_core.run.config import NO_BUDGET, Config
from runner_shell.loop.hooks import fire_hook
from runner_shell.store.event_log import EventLogRefused, append_events
from runner_shell.store.iteration_log import load_history, utc_now
from runner_shell.store.layout import RunnerPaths


def events_path(paths: RunnerPaths, run_id: str) -> Path:
    return paths.events_log(run_id)


class Emitter(Protocol):
    """Where an iteration's events go (an `EventSink`, or a test's list)."""

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None: ...


@attrs.frozen(slots=True)
class EventSink:
    """Appends a run's events and fires the hooks they match."""

    path: Path
    config: Config
    root: Path

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
        events = tuple(events)
        if not events:
            return
        append_events(self.path, events, fsync=fsync)
        for event in events:
            self._fire(event)

    def _fire(self, event: Event) -> None:
        hooks = self.config.hooks
        result = fire_hook(hooks, event, self.root, self.config.loop.hook_timeout_secs)
        if result is None or result.ok:
            return
        print(result.stderr_line(), file=sys.stderr, flush=True)
        here = EventOrigin(event.run_id, event.iter, event.node_id, event.at)
        failed = hook_failed(here, result.hook, result.argv, result.outcome.value, result.detail)
        append_events(self.path, (failed,), fsync=True)


def sink_for(paths: RunnerPaths, config: Config, run_id: str) -> EventSink:
    return EventSink(events_path(paths, run_id), config, paths.root)


@attrs.define
class IterationEvents:
    """An iteration's emitter: `events.jsonl` refused mid-iteration (an agent replaced it, or
    its directory) silences the rest of the iteration's events instead of stopping it half
    done; `raise_refusal`, once the iteration has committed, ends the step in one line."""

    sink: EventSink
    refusal: EventLogRefused | None = None

    def check(self) -> None:
        """Refuse before the iteration starts, when `events.jsonl` cannot take its events."""
        append_events(self.sink.path, ())

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
        if self.refusal is not None:
            return
        try:
            self.sink.emit(events, fsync=fsync)
        except EventLogRefused as error:
            self.refusal = error

    def raise_refusal(self) -> None:
        if self.refusal is not None:
            raise self.refusal


def budget_summary(paths: RunnerPaths, config: Config, run_id: str) -> HistorySummary:
    """What the run has spent, for its `[budget]`: the history is read only when one is set."""
    if config.budget == NO_BUDGET:
        return ExecutionHistory().summary()
    history, _warnings = load_history(paths, run_id)
    return history.summary()


def reached_budget(paths: RunnerPaths, config: Config, run_id: str) -> BudgetUse | None:
    """The budget the run has reached, None while every one set has room."""
    return exhausted_budget(config.budget, budget_summary(paths, config, run_id))


@attrs.define
class OutputEvents:
    """Turns a process's output, as it comes, into rate-limited, capped agent_output events."""

    sink: Emitter
    origin: EventOrigin
    source: str  # the log the lines go to: executor, planner_executor, guard
    policy: OutputPolicy = attrs.field(factory=OutputPolicy)
    pending: PendingOutput = attrs.field(factory=PendingOutput)
    partial: bytes = b""
    last_emit: float | None = None

    def feed(self, piece: bytes) -> None:
        *whole, self.partial = (self.partial + piece).split(b"\n")
        lines = tuple(line.decode("utf-8", errors="replace") for line in whole)
        self.pending = add_output(self.pending, lines, self.policy)
        self._emit(final=False)

    def close(self) -> None:
        if self.partial:
            self.feed(b"\n")
        self._emit(final=True)

    def _emit(self, *, final: bool) -> None:
        now = time.monotonic()
        emission = decide_output(self.pending, self.last_emit, now, self.policy, final=final)
        self.pending = emission.pending
        if emission.lines is None:
            return
        self.last_emit = now
        here = attrs.evolve(self.origin, at=utc_now())
        self.sink.emit((agent_output(here, self.source, emission.lines, emission.dropped),))


@attrs.define
class LiveOutput:
    """Hands each process of an iteration its `OutputEvents`, flushing the previous one's."""

    sink: Emitter
    origin: EventOrigin
    current: OutputEvents | None = None

    def start(self, log_name: str) -> Callable[[bytes], None]:
        self.flush()
        source = log_name.removeprefix(".").split(".")[0]
        self.current = OutputEvents(self.sink, self.origin, source)
        return self.current.feed

    def flush(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


# ---------------------------------------------------------------- signals


HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A signal arrived while an agent, a guard or a wait was running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Interrupts:
    """The process's one signal state while `runner step` or `runner loop` runs."""

    pending: int | None = None
    raising: bool = False

    @classmethod
    def handle(cls, signum: int, _frame: FrameType | None) -> None:
        if cls.pending is not None:
            # A second signal during the cleanup: leave the journal for `runner recover`.
            os._exit(128 + signum)
        cls.pending = signum
        if cls.raising:
            cls.raising = False
            raise Interrupted(signum)

    @classmethod
    def exit_code(cls) -> int | None:
        return None if cls.pending is None else 128 + cls.pending


@contextlib.contextmanager
def signals_handled() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP are the runner's while the block runs."""
    previous = {signum: signal.getsignal(signum) for signum in HANDLED_SIGNALS}
    Interrupts.pending, Interrupts.raising = None, False
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, Interrupts.handle)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        Interrupts.raising = False


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """A signal inside the block raises `Interrupted` there; one already pending, at once."""
    if Interrupts.pending is not None:
        raise Interrupted(Interrupts.pending)
    Interrupts.raising = True
    try:
        yield
    finally:
        Interrupts.raising = False


def sleep_interruptibly(secs: float) -> None:
    with interruptible():
        time.sleep(secs)
