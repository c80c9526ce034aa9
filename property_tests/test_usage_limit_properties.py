"""Properties of limit recognition: any CLI output is read without an exception, and a limit's
wait is never negative and never longer than max_wait_secs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.loop.usage_limits import wait_until
from tests.helpers.agent_limits import claude_limit, codex_limit

moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
zones = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
reset_texts = st.from_regex(
    r"\A(You\u2019ve hit your usage limit\. [Tt]ry again at ([A-Z][a-z]{2} \d{1,2}(st|nd|rd|th),"
    r" \d{4} )?\d{1,2}:\d{2} (AM|PM)\.|You've hit your 5-hour limit \u00b7 resets "
    r"([A-Z][a-z]{2} \d{1,2}, )?\d{1,2}(:\d{2})?(am|pm) \([A-Za-z/]+\))\Z"
)


@given(st.text() | reset_texts, moments, zones)
def test_recognising_a_limit_never_raises(message: str, now: datetime, zone: timezone) -> None:
    """Whatever a CLI printed, both recognisers answer a signal or None."""
    failed = {"type": "turn.failed", "error": {"message": message}}
    codex_limit(json.dumps(failed), now, zone)
    result = {"is_error": True, "api_error": "usage_limit_reached", "result": message}
    claude_limit(json.dumps(result), now, zone)


signals = st.builds(
    LimitSignal,
    kind=st.sampled_from(list(LimitKind)),
    message=st.text(max_size=5),
    retry_at=st.none() | moments.map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")),
    retry_after_secs=st.none() | st.integers(min_value=0, max_value=10**9),
)


@given(
    signals,
    moments,
    st.integers(min_value=1, max_value=7 * 86400),
    st.integers(min_value=0, max_value=86400),
)
def test_a_limit_wait_is_between_zero_and_max_wait_secs(
    signal: LimitSignal, now: datetime, max_wait: int, default: int
) -> None:
    """0 <= secs <= max_wait_secs, `until` is now + secs, and a capped wait is max_wait_secs."""
    wait = wait_until(signal, now, max_wait, default)
    assert 0 <= wait.secs <= max_wait
    assert wait.until == (now + timedelta(seconds=wait.secs)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert not wait.capped or wait.secs == max_wait
