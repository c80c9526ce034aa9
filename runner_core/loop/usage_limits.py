"""Usage and rate limits: how long the loop waits for a limit the agent hit.

Decides how long the loop waits for a limit, capped. What a limit says is
`runner_core.backends.limits`; which output is a limit is each backend's own (codex's and
claude's messages, a `command` agent's wait file). Never reads a clock: the shell passes `now`
(an aware datetime).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs

from runner_core.backends.limits import LimitSignal, iso_utc

# ---------------------------------------------------------------- the wait


@attrs.frozen(slots=True)
class LimitWait:
    """How long the loop sleeps for a limit: `secs` from now, until `until` (ISO-8601 UTC)."""

    secs: int
    until: str
    capped: bool


def wait_until(
    signal: LimitSignal, now: datetime, max_wait_secs: int, default_secs: int
) -> LimitWait:
    """The wait for `signal` at `now`: its retry time, else `default_secs`, at most
    `max_wait_secs`; a retry time already past waits 0 seconds."""
    if signal.retry_after_secs is not None:
        wanted = signal.retry_after_secs
    elif signal.retry_at is not None:
        ahead = (datetime.fromisoformat(signal.retry_at) - now).total_seconds()
        wanted = max(0, math.ceil(ahead))
    else:
        wanted = default_secs
    secs = min(wanted, max_wait_secs)
    return LimitWait(secs, iso_utc(now + timedelta(seconds=secs)), capped=wanted > max_wait_secs)
