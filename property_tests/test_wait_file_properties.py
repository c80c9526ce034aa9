"""Properties of a `command` agent's wait file: any `retry_at` the agent writes is a wait the
loop can compute or a one-line WaitFileError, never another exception; and every UTC time the
runner writes reads back as the same moment."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.command import WaitFileError, wait_file_limit
from runner_core.backends.limits import iso_utc
from runner_core.loop.usage_limits import wait_until

zones = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@given(st.datetimes(timezones=zones))
def test_any_retry_at_is_a_wait_or_the_agent_s_one_line_error(moment: datetime) -> None:
    """Every representable time with every zone offset: a computable wait, else WaitFileError."""
    text = json.dumps({"retry_at": moment.isoformat()})
    try:
        signal = wait_file_limit(text)
    except WaitFileError as error:
        assert "\n" not in str(error)
        return
    assert signal.retry_at is not None
    assert datetime.fromisoformat(signal.retry_at) == moment.replace(microsecond=0)
    wait = wait_until(signal, now, 3600, 60)
    assert 0 <= wait.secs <= 3600


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_utc_time_reads_back_as_the_same_second(moment: datetime) -> None:
    """iso_utc's text parses back whatever the year, years before 1000 included."""
    assert datetime.fromisoformat(iso_utc(moment)) == moment.replace(microsecond=0)
