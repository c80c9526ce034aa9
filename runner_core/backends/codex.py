"""What `codex exec --json` output means: its JSONL events, how a turn ended, the tokens it
used and the usage or rate limit it ended on.

Decides which line of codex's stream is an event, which event says how the turn ended, what
its turn.completed events add up to, and whether its failure is a limit and when that resets.
The messages are codex's own. Never reads a file or a clock: the shell hands in codex's lines
one at a time, `now` (an aware datetime) and the zone of codex's clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime, tzinfo
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.backends._clock import MONTHS, calendar_day, clock_time, end_of_shown_minute
from runner_core.backends._json import parse_json
from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.backends.usage import Usage, token_count


def codex_event(line: str | bytes) -> dict[str, Any] | None:
    """One line of `codex exec --json` output as an event; None for a plain-text notice."""
    event = parse_json(line)
    return event if isinstance(event, dict) else None


def _message(holder: object) -> str | None:
    message = holder.get("message") if isinstance(holder, dict) else None
    return message if isinstance(message, str) and message.strip() else None


@attrs.frozen(slots=True)
class CodexEnding:
    """How a codex turn ended so far, fed its events in order (`after`): the failure is the
    `turn.failed` message, else the last `error` event that is not a retry in progress
    (`Reconnecting... n/5 (M)`); None when neither came."""

    turn_failed: str | None = None
    last_error: str | None = None

    def after(self, event: Mapping[str, Any]) -> CodexEnding:
        kind = event.get("type")
        if kind == "turn.failed" and (message := _message(event.get("error"))) is not None:
            return attrs.evolve(self, turn_failed=message)
        message = _message(event) if kind == "error" else None
        if message is not None and not message.startswith("Reconnecting..."):
            return attrs.evolve(self, last_error=message)
        return self

    @property
    def failure(self) -> str | None:
        return self.turn_failed if self.turn_failed is not None else self.last_error


_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")


def usage_after(usage: Usage, event: Mapping[str, Any]) -> Usage:
    """`usage` with a turn.completed event's counts added; each count is None until one is
    reported, and codex never reports a cost."""
    counts = event.get("usage")
    if event.get("type") != "turn.completed" or not isinstance(counts, dict):
        return usage
    totals: dict[str, int | None] = {key: getattr(usage, key) for key in _USAGE_KEYS}
    for key in _USAGE_KEYS:
        count = token_count(counts.get(key))
        if count is not None:
            totals[key] = (totals[key] or 0) + count
    return attrs.evolve(usage, **totals)


# ---------------------------------------------------------------- limits

_CODEX_USAGE_LIMIT = "You\u2019ve hit your usage limit."
# `try again at 3:51 PM.` the same day, `try again at Nov 23rd, 2026 4:51 PM.` another day.
_CODEX_RESET = re.compile(
    rf"[Tt]ry again at (?:(?P<month>{'|'.join(MONTHS)}) (?P<day>\d{{1,2}})(?:st|nd|rd|th), "
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


def _codex_reset(message: str, now: datetime, tz: tzinfo) -> str | None:
    found = _CODEX_RESET.search(message)
    if found is None:
        return None
    shown = clock_time(found["hour"], found["minute"], found["half"])
    day: date | None = now.astimezone(tz).date()
    if found["month"] is not None:
        day = calendar_day(int(found["year"]), found["month"], found["day"])
    return None if day is None else iso_utc(end_of_shown_minute(day, shown, tz))


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
