"""What a `command` agent reports beside its output: its usage file (RUNNER_USAGE_PATH) and
the wait it asks for (RUNNER_WAIT_PATH), as the README's agent contract describes them.

Decides what each file's text means, field by field. Never reads the files (the shell hands
in their text) and never decides whether the process failed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from runner_core.backends._json import parse_json
from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.backends.usage import Usage, cost_usd, token_count
from runner_core.json_text import json_value


def usage_file_usage(text: str) -> Usage:
    """The usage file's counts and cost; anything malformed counts as not reported, field by
    field."""
    usage = parse_json(text)
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        cached_input_tokens=token_count(usage.get("cached_input_tokens")),
        cost_usd=cost_usd(usage.get("cost_usd")),
    )


class WaitFileError(ValueError):
    """A `RUNNER_WAIT_PATH` file that says neither `retry_after_secs` nor `retry_at`."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
WAIT_FILE_SHAPE = 'write {"retry_after_secs": <seconds>} or {"retry_at": "<ISO-8601 with zone>"}'


def wait_file_limit(text: str) -> LimitSignal:
    """The wait a `command` agent asked for in its `RUNNER_WAIT_PATH` file."""
    try:
        body = json_value(text)
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
    # No service asks to be retried before the epoch; a zone offset can also carry a time past
    # the first or the last day a datetime holds.
    try:
        in_range = moment >= _EPOCH
        text = iso_utc(moment)
    except OverflowError:
        in_range = False
    if not in_range:
        raise WaitFileError(f"retry_at is out of range (1970 to 9999 UTC), got {value!r}")
    return text
