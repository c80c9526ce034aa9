"""Usage and rate limits: what a limit the agent hit says, and how long the loop waits for it.

Decides how long the loop waits for a limit, capped. Which output is a limit is each backend's
own (runner_core.backends: codex's and claude's messages, a `command` agent's wait file). Never
reads a clock: the shell passes `now` (an aware datetime).
"""

from __future__ import annotations

import enum
import math
from datetime import UTC, datetime, timedelta

import attrs


class LimitKind(enum.StrEnum):
    RATE_LIMITED = "rate_limited"
    USAGE_LIMITED = "usage_limited"


@attrs.frozen(slots=True)
class LimitSignal:
    """A limit the agent hit: when to try again (`retry_at` ISO-8601 UTC, or `retry_after_secs`
    from the end of the run, or neither when the CLI did not say) and the CLI's message."""

    kind: LimitKind
    message: str
    retry_at: str | None = None
    retry_after_secs: int | None = None


def iso_utc(moment: datetime) -> str:
    """`2026-11-22T15:52:00Z`: an aware datetime in UTC, to the second. The year has four
    digits whatever the platform's strftime does with years before 1000, so the text always
    reads back with `datetime.fromisoformat`."""
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"


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
