"""Usage and rate limits: whether an agent run ended on one, and how long to wait.

Decides, from what the backends keep (how codex's JSONL stream ended and claude's result object,
as runner_core.backends.agent_results reads them; a `command` agent's `RUNNER_WAIT_PATH`
file), whether
the agent hit a usage or rate limit and when it may try again; then how long the loop waits,
capped. The messages are the CLIs' own, as recorded in
shared/agent-cli-limits.md. Never reads a clock, a file or the time zone database: the shell
passes `now` (an aware datetime) and the CLI's time zone as a `tzinfo`.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from types import MappingProxyType
from typing import Any

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
    """`2026-11-22T15:52:00Z`: an aware datetime in UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- codex

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CODEX_USAGE_LIMIT = "You\u2019ve hit your usage limit."
# `try again at 3:51 PM.` the same day, `try again at Nov 23rd, 2026 4:51 PM.` another day.
_CODEX_RESET = re.compile(
    rf"[Tt]ry again at (?:(?P<month>{'|'.join(_MONTHS)}) (?P<day>\d{{1,2}})(?:st|nd|rd|th), "
    r"(?P<year>\d{4}) )?(?P<hour>1[0-2]|[1-9]):(?P<minute>[0-5]\d) (?P<half>AM|PM)\.?$"
)
# OpenAI's `Please try again in 2s.` (also `20ms`, `1.5s`, `6m0s`, `1h2m3s`).
_RETRY_IN = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECS = MappingProxyType({"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0})

# codex's final messages for a limit: (how the message starts, kind). Order matters: first wins.
CODEX_LIMIT_MESSAGES: tuple[tuple[str, LimitKind], ...] = (
    (_CODEX_USAGE_LIMIT, LimitKind.USAGE_LIMITED),
    ("Quota exceeded. Check your plan and billing details.", LimitKind.USAGE_LIMITED),
    (
        "stream disconnected before completion: The usage limit has been reached",
        LimitKind.USAGE_LIMITED,
    ),
    ("exceeded retry limit, last status: 429 Too Many Requests", LimitKind.RATE_LIMITED),
    ("rate limit exceeded: ", LimitKind.RATE_LIMITED),
)


def _clock_time(hour: str, minute: str | None, half: str) -> time:
    hour_12 = int(hour) % 12
    return time(hour_12 + (12 if half.lower() == "pm" else 0), int(minute or 0))


def _calendar_day(year: int, month: str, day: str) -> date | None:
    if year >= date.max.year:
        return None
    try:
        return date(year, _MONTHS.index(month) + 1, int(day))
    except ValueError:
        # `Feb 30th`: no such day, so no reset time to read.
        return None


def _end_of_shown_minute(day: date, shown: time, tz: tzinfo) -> datetime:
    # Both CLIs round the reset down to the minute: it is over by the end of that minute.
    return datetime.combine(day, shown, tzinfo=tz) + timedelta(minutes=1)


def _codex_reset(message: str, now: datetime, tz: tzinfo) -> str | None:
    found = _CODEX_RESET.search(message)
    if found is None:
        return None
    shown = _clock_time(found["hour"], found["minute"], found["half"])
    day: date | None = now.astimezone(tz).date()
    if found["month"] is not None:
        day = _calendar_day(int(found["year"]), found["month"], found["day"])
    return None if day is None else iso_utc(_end_of_shown_minute(day, shown, tz))


def _retry_in_secs(message: str) -> int | None:
    found = _RETRY_IN.search(message)
    if found is None:
        return None
    secs = sum(
        float(amount) * _UNIT_SECS[unit] for amount, unit in _DURATION_PART.findall(found[1])
    )
    return max(1, math.ceil(secs))


def codex_message_limit(message: str, now: datetime, tz: tzinfo) -> LimitSignal | None:
    """The limit a codex failure message reports, None when it is another failure."""
    for start, kind in CODEX_LIMIT_MESSAGES:
        if message.startswith(start):
            return LimitSignal(
                kind, message, _codex_reset(message, now, tz), _retry_in_secs(message)
            )
    return None


# ---------------------------------------------------------------- claude

# `· resets 3:59pm (UTC)`, `· resets 5pm (UTC)`, `· resets Nov 24, 5:59pm (UTC)`.
_CLAUDE_RESET = re.compile(
    rf"\u00b7 resets (?:(?P<month>{'|'.join(_MONTHS)}) (?P<day>\d{{1,2}}), )?"
    r"(?P<hour>1[0-2]|[1-9])(?::(?P<minute>[0-5]\d))?(?P<half>am|pm) \((?P<zone>[^)]+)\)"
)
_CLAUDE_RATE_LIMIT_TEXTS = (
    "API Error: Server is temporarily limiting requests",
    "API Error: 529 Overloaded.",
)


def _claude_reset(message: str, now: datetime, tz: tzinfo) -> str | None:
    found = _CLAUDE_RESET.search(message)
    if found is None:
        return None
    zone = UTC if found["zone"] == "UTC" else tz
    local_now = now.astimezone(zone)
    shown = _clock_time(found["hour"], found["minute"], found["half"])
    if found["month"] is None:
        return iso_utc(_end_of_shown_minute(local_now.date(), shown, zone))
    day = _calendar_day(local_now.year, found["month"], found["day"])
    if day is not None and _end_of_shown_minute(day, shown, zone) < now - timedelta(days=1):
        # Shown without a year: a date well before now is next year's (Dec 31 -> Jan 1).
        day = _calendar_day(local_now.year + 1, found["month"], found["day"])
    return None if day is None else iso_utc(_end_of_shown_minute(day, shown, zone))


def claude_result_limit(
    result: Mapping[str, Any] | None, now: datetime, tz: tzinfo
) -> LimitSignal | None:
    """The limit claude's result object (`claude_result`) reports, if any.

    A subscription usage limit says `"api_error": "usage_limit_reached"` and its reset only in
    `result`, in the zone it names (`tz` when the name is not UTC). A 429 or 529 that outlasted
    claude's own retries is a rate limit without a time.
    """
    if result is None or result.get("is_error") is not True:
        return None
    message = result.get("result")
    message = message if isinstance(message, str) else ""
    if result.get("api_error") == "usage_limit_reached":
        return LimitSignal(LimitKind.USAGE_LIMITED, message, _claude_reset(message, now, tz))
    status, error_type = result.get("api_error_status"), result.get("api_error_type")
    if (
        status in (429, 529)
        or error_type in ("rate_limit_error", "overloaded_error")
        or message.startswith(_CLAUDE_RATE_LIMIT_TEXTS)
    ):
        return LimitSignal(LimitKind.RATE_LIMITED, message)
    return None


# ---------------------------------------------------------------- RUNNER_WAIT_PATH


class WaitFileError(ValueError):
    """A `RUNNER_WAIT_PATH` file that says neither `retry_after_secs` nor `retry_at`."""


WAIT_FILE_SHAPE = 'write {"retry_after_secs": <seconds>} or {"retry_at": "<ISO-8601 with zone>"}'


def wait_file_limit(text: str) -> LimitSignal:
    """The wait a `command` agent asked for in its `RUNNER_WAIT_PATH` file."""
    try:
        body = json.loads(text)
    except ValueError:
        raise WaitFileError(f"not JSON; {WAIT_FILE_SHAPE}") from None
    if not isinstance(body, dict) or len(body) != 1:
        raise WaitFileError(f"must be an object with one key; {WAIT_FILE_SHAPE}")
    message = "the agent asked to wait (RUNNER_WAIT_PATH)"
    if "retry_after_secs" in body:
        secs = body["retry_after_secs"]
        if not isinstance(secs, int) or isinstance(secs, bool) or secs < 0:
            raise WaitFileError(f"retry_after_secs must be an integer >= 0, got {secs!r}")
        return LimitSignal(LimitKind.RATE_LIMITED, message, retry_after_secs=secs)
    if "retry_at" in body:
        return LimitSignal(
            LimitKind.RATE_LIMITED, message, retry_at=_wait_file_time(body["retry_at"])
        )
    raise WaitFileError(f"unknown key {next(iter(body))!r}; {WAIT_FILE_SHAPE}")


def _wait_file_time(value: Any) -> str:
    problem = f"retry_at must be an ISO-8601 time with a zone (2026-11-22T03:00:00Z), got {value!r}"
    if not isinstance(value, str):
        raise WaitFileError(problem)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise WaitFileError(problem) from None
    if moment.tzinfo is None:
        raise WaitFileError(problem)
    return iso_utc(moment)


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
