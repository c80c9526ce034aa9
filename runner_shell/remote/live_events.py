"""A remote job seen while it runs (docs/temporal.md, "Watching remote jobs"): the window of its
latest events its worker sends as each heartbeat, and which of a window's events the loop has
not emitted yet.

Decides only how a window is written and read and which events are fresh; asking the server,
writing files and emitting events are the coordinator's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from runner_core.json_text import json_value

# How many of a job's latest events each heartbeat carries.
WINDOW_EVENTS = 50


@attrs.frozen(slots=True)
class JobProgress:
    """A job's activity as the server last heard of it: the identity of the worker running it
    now (None while none does) and its last heartbeat's details."""

    worker: str | None
    details: str | None


@attrs.frozen(slots=True)
class Window:
    """The last events of a job (each as `wire.encode` wrote it): `seen` events emitted so far,
    the last of `events` being event `seen - 1` (counting from 0)."""

    seen: int
    events: tuple[object, ...]

    @property
    def first(self) -> int:
        """The index of `events[0]` among all the job's events."""
        return self.seen - len(self.events)


def window_json(encoded: Sequence[object]) -> str:
    """A heartbeat's details for a job that has emitted `encoded` so far: canonical JSON of
    `{"seen": N, "events": [the last WINDOW_EVENTS of them]}`."""
    document = {"seen": len(encoded), "events": list(encoded[-WINDOW_EVENTS:])}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_window(details: str | None) -> Window | None:
    """The window `details` holds; None for details that are not one (none yet, or a worker
    that sends something else)."""
    if details is None:
        return None
    try:
        document = json_value(details)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    seen, events = document.get("seen"), document.get("events")
    if isinstance(seen, bool) or not isinstance(seen, int) or not isinstance(events, list):
        return None
    if not 0 <= len(events) <= seen:
        return None
    return Window(seen, tuple(events))


def fresh_events(window: Window, emitted: int) -> tuple[tuple[object, ...], int]:
    """The events of `window` not emitted yet, given that the first `emitted` of the job's
    events were, and how many are emitted once these are.

    Events are emitted in order, each once: a window that starts past `emitted` (more events
    came between two looks than it holds) gives none, and the rest come with the job's answer.
    """
    if window.first > emitted or window.seen <= emitted:
        return (), emitted
    return window.events[emitted - window.first :], window.seen
