"""A process's output as it comes, turned into rate-limited, capped `agent_output` events.

How many lines an event holds and how often one is emitted is the core's decision
(`runner_core.loop.events`); here the bytes are split into lines, timed and handed to an
emitter.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from runner_core.loop.events import (
    EventOrigin,
    agent_output,
)
from runner_core.loop.output import (
    OutputPolicy,
    PendingOutput,
    add_output,
    decide_output,
    newest_kept,
    output_due,
    partial_line_kept_bytes,
)
from runner_shell.step.event_sink import Emitter
from runner_shell.store.iteration_log import utc_now


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
    # The newest whole lines read since they were last added to `pending`, still undecoded,
    # and how many older ones were read meanwhile: only the newest can ever be kept.
    unread: tuple[bytes, ...] = ()
    unread_earlier: int = 0

    def feed(self, piece: bytes) -> None:
        # Lines are decoded only when an event is due (at most once per interval), and only the
        # newest that can be kept; a line with no end yet is held only as far as it can be shown.
        keep = newest_kept(self.policy)
        parts = (self.partial + piece).rsplit(b"\n", keep + 1)
        if len(parts) == keep + 2:
            self.unread_earlier += parts[0].count(b"\n") + 1 + len(self.unread)
            self.unread = ()
            parts = parts[1:]
        *whole, partial = parts
        self.partial = partial[: partial_line_kept_bytes(self.policy)]
        together = self.unread + tuple(whole)
        self.unread_earlier += max(0, len(together) - keep)
        self.unread = together[-keep:] if len(together) > keep else together
        self._emit(final=False)

    def close(self) -> None:
        if self.partial:
            self.feed(b"\n")
        self._emit(final=True)

    def _emit(self, *, final: bool) -> None:
        now = time.monotonic()
        if not final and not output_due(self.last_emit, now, self.policy):
            return
        lines = tuple(line.decode("utf-8", errors="replace") for line in self.unread)
        self.pending = add_output(self.pending, lines, self.policy, earlier=self.unread_earlier)
        self.unread, self.unread_earlier = (), 0
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
