"""What `claude -p --output-format json` output means: its result object, the tokens and cost
it reports, whether it failed, and the usage or rate limit it ended on.

Decides which object on claude's stdout is its result (a stray line around it tolerated), where
the last JSON object in a text is, and whether a failed result is a limit and when that resets.
The messages are claude's own. Never reads a file or a clock: the shell hands in the text,
`now` (an aware datetime) and the zone of claude's clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from runner_core.backends._clock import MONTHS, calendar_day, clock_time, end_of_shown_minute
from runner_core.backends._json import parse_json
from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.backends.usage import Usage, cost_usd, token_count


def last_json_object(text: str) -> str | None:
    """The last top-level JSON object in `text`, exactly as written there.

    The text may wrap it in prose or a code fence. Each `{` is handed to the JSON decoder, which
    matches braces while honouring strings and escapes; a decoded object is skipped whole, so the
    objects nested inside it never count.
    """
    decoder = json.JSONDecoder()
    last: str | None = None
    start = text.find("{")
    while start != -1:
        try:
            _value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        last = text[start:end]
        start = text.find("{", end)
    return last


def claude_result(stdout: str) -> dict[str, Any] | None:
    """The result object `claude -p --output-format json` printed, None when there is none.

    A stray line around it (a warning printed to stdout) is tolerated: the last top-level object
    counts. `--verbose` prints an array of messages, whose last `result` message counts.
    """
    parsed = parse_json(stdout)
    if parsed is None:
        found = last_json_object(stdout)
        parsed = parse_json(found) if found is not None else None
    if isinstance(parsed, list):
        results = [
            item for item in parsed if isinstance(item, dict) and item.get("type") == "result"
        ]
        parsed = results[-1] if results else None
    return parsed if isinstance(parsed, dict) else None


def claude_reported_error(result: Mapping[str, Any]) -> bool:
    """Whether the result says the session failed (`is_error`, or an `error...` subtype)."""
    subtype = result.get("subtype")
    return result.get("is_error") is True or (
        isinstance(subtype, str) and subtype.startswith("error")
    )


def claude_usage(result: Mapping[str, Any] | None) -> Usage:
    """The tokens and cost a result object reports; cache reads count as cached input."""
    if result is None:
        return Usage()
    usage = result.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Usage(
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        cached_input_tokens=token_count(usage.get("cache_read_input_tokens")),
        cost_usd=cost_usd(result.get("total_cost_usd")),
    )


# ---------------------------------------------------------------- limits

# `· resets 3:59pm (UTC)`, `· resets 5pm (UTC)`, `· resets Nov 24, 5:59pm (UTC)`.
_CLAUDE_RESET = re.compile(
    rf"\u00b7 resets (?:(?P<month>{'|'.join(MONTHS)}) (?P<day>\d{{1,2}}), )?"
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
    shown = clock_time(found["hour"], found["minute"], found["half"])
    if found["month"] is None:
        return iso_utc(end_of_shown_minute(local_now.date(), shown, zone))
    day = calendar_day(local_now.year, found["month"], found["day"])
    if day is not None and end_of_shown_minute(day, shown, zone) < now - timedelta(days=1):
        # Shown without a year: a date well before now is next year's (Dec 31 -> Jan 1).
        day = calendar_day(local_now.year + 1, found["month"], found["day"])
    return None if day is None else iso_utc(end_of_shown_minute(day, shown, zone))


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
