"""A graceful pause (`runner stop`): the loop's stop reason checked between iterations.

Decides whether a stop request ends the loop before its next step, and what the loop then
records: a `paused` event and exit 0 (its line is views.loop_lines.paused_line), so `runner loop`
resumes where it stopped. Never reads the request; the shell says whether one is there.
"""

from __future__ import annotations

import attrs

from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin
from runner_core.run.exit_codes import ExitCode


@attrs.frozen(slots=True)
class Pause:
    """The loop ends here: its event and its exit code."""

    event: Event
    exit_code: int = ExitCode.OK


def pause_before_step(
    requested: bool, origin: EventOrigin, steps: int, started_at_iter: int
) -> Pause | None:
    """A `Pause` when a stop was requested, None to go on. Checked only between iterations:
    the iteration in progress always ends and commits first."""
    if not requested:
        return None
    return Pause(events.paused(attrs.evolve(origin, node_id=None), steps))
