"""The run's event sink: appends the events the core decided to `events.jsonl`, queues their
`[notify]` messages and fires their hooks.

A hook's failure is printed on stderr and logged as a `hook_failed` event; it never changes the
run. An iteration's emitter keeps a refused `events.jsonl` from stopping the iteration half
done. Nothing here decides which events happen or which hook an event fires.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import attrs

from runner_core.loop.events import Event, EventOrigin, hook_failed
from runner_core.run.config import Config
from runner_shell.step.hooks import fire_hook
from runner_shell.store.event_log import EventLogRefused, append_events
from runner_shell.store.layout import Places


def events_path(paths: Places, run_id: str) -> Path:
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
            if self.config.notify.urls:
                # Imported only by a run that notifies (start-up speed); queued, never waited on.
                from runner_shell.notify.sender import notify_event

                notify_event(self.config.notify, event)
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


def sink_for(paths: Places, config: Config, run_id: str) -> EventSink:
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
