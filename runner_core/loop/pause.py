"""A graceful pause (`runner stop`): the loop's stop reason checked between iterations.

Decides whether a stop request ends the loop before its next step, and what the loop then
prints and records: `loop: status=paused ...` with exit 0, a `paused` event, so `runner loop`
resumes where it stopped. Never reads the request; the shell says whether one is there.
"""

from __future__ import annotations

import attrs

from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin
from runner_core.loop.policy import EXIT_OK, ran_fields, status_line

PAUSED_STATUS = "paused"


@attrs.frozen(slots=True)
class Pause:
    """The loop ends here: its last line, its event and its exit code."""

    line: str
    event: Event
    exit_code: int = EXIT_OK


def pause_before_step(
    requested: bool, origin: EventOrigin, steps: int, started_at_iter: int
) -> Pause | None:
    """A `Pause` when a stop was requested, None to go on. Checked only between iterations:
    the iteration in progress always ends and commits first."""
    if not requested:
        return None
    line = status_line(PAUSED_STATUS, origin.run_id, ran_fields(steps, started_at_iter))
    return Pause(line, events.paused(attrs.evolve(origin, node_id=None), steps))
