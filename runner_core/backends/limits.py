"""A usage or rate limit an agent hit, as its CLI reported it.

Decides only what a limit says: its kind, the CLI's message and when to try again. How long the
loop waits for it is `runner_core.loop.usage_limits`; which output is a limit is each backend's
own module. Never reads a clock.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime

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
