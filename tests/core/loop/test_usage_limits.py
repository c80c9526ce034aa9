"""Usage and rate limits, recognised from every outcome the real CLIs print on one."""

from __future__ import annotations

import json
import math
import os
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from runner_core.backends.command import WaitFileError, wait_file_limit
from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.loop.usage_limits import LimitWait, wait_until
from tests.helpers import FAKE_CLIS
from tests.helpers.agent_limits import claude_limit, codex_limit

NOW = datetime(2026, 11, 22, 15, 50, 10, tzinfo=UTC)
USAGE, RATE = LimitKind.USAGE_LIMITED, LimitKind.RATE_LIMITED
LIMIT = "You\u2019ve hit your usage limit."
PRO = "Visit https://chatgpt.com/settings/usage to purchase more credits or try again at"
PLUS = (
    "Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/settings/usage to purchase more credits or try again at"
)


def codex_stream(message: str, *, reconnects: int = 0, failed: bool = True) -> str:
    events: list[dict[str, object]] = [{"type": "thread.started", "thread_id": "t"}]
    events.append({"type": "turn.started"})
    for attempt in range(1, reconnects + 1):
        events.append({"type": "error", "message": f"Reconnecting... {attempt}/5 ({message})"})
    if failed:
        events.append({"type": "error", "message": message})
        events.append({"type": "turn.failed", "error": {"message": message}})
    else:
        events.append({"type": "turn.completed", "usage": {}})
    return "".join(json.dumps(event, ensure_ascii=False) + "\n" for event in events)


# (message, kind or None, retry_at, retry_after_secs); a reset rounded down to the minute is
# over by the end of that minute.
CODEX_ROWS = [
    (f"{LIMIT} {PRO} 3:51 PM.", USAGE, "2026-11-22T15:52:00Z", None),
    (f"{LIMIT} {PLUS} Nov 23rd, 2026 4:51 PM.", USAGE, "2026-11-23T16:52:00Z", None),
    (f"{LIMIT} Try again at 3:51 PM.", USAGE, "2026-11-22T15:52:00Z", None),
    (f"{LIMIT} Try again at 5:00 PM.", USAGE, "2026-11-22T17:01:00Z", None),
    (f"{LIMIT} Try again at Nov 24th, 2026 5:00 PM.", USAGE, "2026-11-24T17:01:00Z", None),
    (f"{LIMIT} Try again at Dec 1st, 2026 12:05 AM.", USAGE, "2026-12-01T00:06:00Z", None),
    (f"{LIMIT} Try again later.", USAGE, None, None),
    (
        "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.",
        None,
        None,
        None,
    ),
    ("Quota exceeded. Check your plan and billing details.", USAGE, None, None),
    ("exceeded retry limit, last status: 429 Too Many Requests", RATE, None, None),
    ("rate limit exceeded: Rate limit reached. Please try again in 2s.", RATE, None, 2),
    ("rate limit exceeded: Rate limit reached. Please try again in 1m30s.", RATE, None, 90),
    ("rate limit exceeded: Rate limit reached. Please try again in 20ms.", RATE, None, 1),
    (
        "stream disconnected before completion: The usage limit has been reached",
        USAGE,
        None,
        None,
    ),
    ("stream disconnected before completion: connection reset", None, None, None),
]


@pytest.mark.parametrize(("message", "kind", "retry_at", "retry_after"), CODEX_ROWS)
def test_codex_failures_are_recognised_from_the_turn_failed_message(
    message: str, kind: LimitKind | None, retry_at: str | None, retry_after: int | None
) -> None:
    expected = None if kind is None else LimitSignal(kind, message, retry_at, retry_after)
    assert codex_limit(codex_stream(message), NOW, UTC) == expected


def test_codex_retries_that_ended_in_success_are_no_limit() -> None:
    message = "exceeded retry limit, last status: 429 Too Many Requests"
    assert codex_limit(codex_stream(message, reconnects=2, failed=False), NOW, UTC) is None


def test_codex_retries_that_ran_out_are_the_final_message() -> None:
    message = "exceeded retry limit, last status: 429 Too Many Requests"
    assert codex_limit(codex_stream(message, reconnects=5), NOW, UTC) == LimitSignal(RATE, message)


def test_a_codex_error_event_without_turn_failed_still_counts() -> None:
    line = json.dumps({"type": "error", "message": f"{LIMIT} Try again later."}) + "\n"
    assert codex_limit("not json\n[]\n" + line, NOW, UTC) == LimitSignal(
        USAGE, f"{LIMIT} Try again later."
    )


def test_the_codex_reset_is_read_in_the_zone_of_its_clock() -> None:
    message = f"{LIMIT} Try again at 11:09 AM."
    new_york = ZoneInfo("America/New_York")
    fixed = timezone(timedelta(hours=-5))
    for zone in (new_york, fixed):
        found = codex_limit(codex_stream(message), NOW, zone)
        assert found is not None and found.retry_at == "2026-11-22T16:10:00Z"


def test_the_codex_same_day_reset_is_the_day_of_its_clock_not_utc() -> None:
    late_evening_in_new_york = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    found = codex_limit(
        codex_stream(f"{LIMIT} Try again at 11:30 PM."),
        late_evening_in_new_york,
        ZoneInfo("America/New_York"),
    )
    assert found is not None and found.retry_at == "2026-11-23T04:31:00Z"


def claude_result(text: str, status: int | None, error_type: str | None, **more: object) -> str:
    result: dict[str, object] = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "terminal_reason": "api_error",
        "stop_reason": "stop_sequence",
        "result": text,
    }
    if status is not None:
        result.update(api_error_status=status, api_error_type=error_type)
    result.update(more)
    return json.dumps(result, ensure_ascii=False)


def usage_limit(text: str) -> str:
    return claude_result(text, 429, "rate_limit_error", api_error="usage_limit_reached")


CLAUDE_ROWS = [
    (
        usage_limit("You've hit your 5-hour limit \u00b7 resets 3:59pm (UTC)"),
        USAGE,
        "2026-11-22T16:00:00Z",
    ),
    (
        usage_limit("You've hit your weekly limit \u00b7 resets Nov 24, 5:59pm (UTC)"),
        USAGE,
        "2026-11-24T18:00:00Z",
    ),
    (
        usage_limit("You've hit your 5-hour limit \u00b7 resets 5pm (UTC)"),
        USAGE,
        "2026-11-22T17:01:00Z",
    ),
    (
        usage_limit("You've hit your weekly limit \u00b7 resets Nov 24, 5pm (UTC)"),
        USAGE,
        "2026-11-24T17:01:00Z",
    ),
    (usage_limit("You've hit your 5-hour limit"), USAGE, None),
    (
        claude_result(
            "API Error: Server is temporarily limiting requests (not your usage limit) \u00b7 "
            "This request would exceed your account's rate limit. Please try again later.",
            None,
            None,
        ),
        RATE,
        None,
    ),
    (
        claude_result(
            "API Error: Request rejected (429) \u00b7 "
            "Number of request tokens has exceeded your per-minute rate limit",
            429,
            "rate_limit_error",
        ),
        RATE,
        None,
    ),
    (
        claude_result(
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary \u2014 "
            "try again in a moment. If it persists, check your inference gateway (h:1).",
            529,
            "overloaded_error",
        ),
        RATE,
        None,
    ),
    (claude_result("Credit balance is too low", 400, "invalid_request_error"), None, None),
    (json.dumps({"type": "result", "is_error": False, "result": "{}"}), None, None),
    ("not json", None, None),
    # An API key's endless 429s: killed before claude printed anything.
    ("", None, None),
]


@pytest.mark.parametrize(("stdout", "kind", "retry_at"), CLAUDE_ROWS)
def test_claude_results_are_recognised(
    stdout: str, kind: LimitKind | None, retry_at: str | None
) -> None:
    found = claude_limit(stdout, NOW, UTC)
    if kind is None:
        assert found is None
    else:
        assert found == LimitSignal(kind, json.loads(stdout)["result"], retry_at)


def test_claude_verbose_output_is_an_array_whose_result_object_counts() -> None:
    text = "You've hit your 5-hour limit \u00b7 resets 3:59pm (UTC)"
    stdout = json.dumps(
        [
            {"type": "system", "subtype": "init"},
            {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected"}},
            json.loads(usage_limit(text)),
        ]
    )
    assert claude_limit(stdout, NOW, UTC) == LimitSignal(USAGE, text, "2026-11-22T16:00:00Z")


def test_a_claude_reset_date_without_a_year_past_new_year_is_next_year() -> None:
    stdout = usage_limit("You've hit your weekly limit \u00b7 resets Jan 1, 5pm (UTC)")
    found = claude_limit(stdout, datetime(2026, 12, 31, 23, 0, tzinfo=UTC), UTC)
    assert found is not None and found.retry_at == "2027-01-01T17:01:00Z"


def test_a_claude_reset_in_a_named_zone_other_than_utc_is_read_in_the_given_zone() -> None:
    stdout = usage_limit("You've hit your 5-hour limit \u00b7 resets 11:09am (America/New_York)")
    found = claude_limit(stdout, NOW, ZoneInfo("America/New_York"))
    assert found is not None and found.retry_at == "2026-11-22T16:10:00Z"


# ---------------------------------------------------------------- RUNNER_WAIT_PATH


def test_a_wait_file_may_ask_for_seconds() -> None:
    assert wait_file_limit('{"retry_after_secs": 5}') == LimitSignal(
        RATE, "the agent asked to wait (RUNNER_WAIT_PATH)", retry_after_secs=5
    )


def test_a_wait_file_may_ask_for_a_moment_in_any_zone() -> None:
    found = wait_file_limit('{"retry_at": "2026-11-22T18:00:00+02:00"}')
    assert found.retry_at == "2026-11-22T16:00:00Z"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not JSON"),
        ("[" * 5_000 + "]" * 5_000, "not JSON"),  # nested past the decoder's depth
        ("[5]", "must be an object with one key"),
        ('{"retry_after_secs": 5, "retry_at": "2026-11-22T18:00:00Z"}', "one key"),
        ('{"wait": 5}', "unknown key 'wait'"),
        ('{"retry_after_secs": -1}', "retry_after_secs must be an integer >= 0, got -1"),
        ('{"retry_after_secs": 1.5}', "retry_after_secs must be an integer >= 0, got 1.5"),
        ('{"retry_after_secs": true}', "retry_after_secs must be an integer >= 0, got True"),
        ('{"retry_at": "tomorrow"}', "retry_at must be an ISO-8601 time with a zone"),
        ('{"retry_at": "2026-11-22T18:00:00"}', "retry_at must be an ISO-8601 time with a zone"),
        ('{"retry_at": 5}', "retry_at must be an ISO-8601 time with a zone"),
    ],
)
def test_anything_else_in_a_wait_file_is_an_error_saying_what_to_write(
    text: str, problem: str
) -> None:
    with pytest.raises(WaitFileError, match=problem):
        wait_file_limit(text)


# ---------------------------------------------------------------- the wait


def test_a_wait_for_seconds_is_that_many_seconds() -> None:
    signal = LimitSignal(RATE, "m", retry_after_secs=30)
    assert wait_until(signal, NOW, 21600, 60) == LimitWait(30, "2026-11-22T15:50:40Z", False)


def test_a_wait_for_a_moment_lasts_until_it_rounded_up() -> None:
    signal = LimitSignal(USAGE, "m", retry_at="2026-11-22T15:52:00Z")
    assert wait_until(signal, NOW, 21600, 60) == LimitWait(110, "2026-11-22T15:52:00Z", False)


def test_a_moment_already_past_waits_nothing() -> None:
    signal = LimitSignal(USAGE, "m", retry_at="2026-11-22T15:00:00Z")
    assert wait_until(signal, NOW, 21600, 60).secs == 0


def test_a_limit_without_a_time_waits_the_default() -> None:
    assert wait_until(LimitSignal(RATE, "m"), NOW, 21600, 60).secs == 60


def test_a_wait_is_capped_at_max_wait_secs() -> None:
    signal = LimitSignal(USAGE, "m", retry_at="2026-11-25T00:00:00Z")
    assert wait_until(signal, NOW, 21600, 60) == LimitWait(21600, "2026-11-22T21:50:10Z", True)


# ---------------------------------------------------------------- the fake CLIs, as processes


def run_fake(program: str, scenario: str, resets_in: int = 120, **env: str) -> tuple[int, str, str]:
    """Run a fake CLI as a real process, the way the backend runs the real one."""
    done = subprocess.run(
        [str(FAKE_CLIS / program), "exec", "--json", "-"],
        input="the prompt",
        capture_output=True,
        text=True,
        env=dict(
            os.environ,
            TZ="UTC",
            FAKE_CLI_SCENARIO=scenario,
            FAKE_CLI_RESETS_IN=str(resets_in),
            **env,
        ),
        timeout=30,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def end_of_minute(moment: datetime) -> str:
    return iso_utc(moment.replace(second=0, microsecond=0) + timedelta(minutes=1))


RECOGNISERS = {"codex": codex_limit, "claude": claude_limit}


@pytest.mark.parametrize(
    ("program", "scenario", "kind", "reset_in"),
    [
        ("codex", "usage_limit", USAGE, 120),
        ("codex", "usage_limit_pro", USAGE, 120),
        ("codex", "usage_limit_plus", USAGE, 25 * 3600),
        ("codex", "usage_limit_later", USAGE, None),
        ("codex", "usage_not_included", None, None),
        ("codex", "quota", USAGE, None),
        ("codex", "retry_limit_429", RATE, None),
        ("codex", "rate_limit_sse", RATE, None),
        ("codex", "stream_usage_limit", USAGE, None),
        ("codex", "ok", None, None),
        ("claude", "five_hour", USAGE, 600),
        ("claude", "weekly", USAGE, 50 * 3600),
        ("claude", "five_hour_no_reset", USAGE, None),
        ("claude", "request_rejected_429", RATE, None),
        ("claude", "overloaded_529", RATE, None),
        ("claude", "credit_too_low", None, None),
        ("claude", "ok", None, None),
    ],
)
def test_the_fake_clis_print_what_the_recogniser_reads(
    program: str, scenario: str, kind: LimitKind | None, reset_in: int | None
) -> None:
    now = datetime.now(UTC)
    code, stdout, stderr = run_fake(program, scenario, reset_in or 120)
    after = datetime.now(UTC)
    assert (code, stderr) == (0 if scenario == "ok" else 1, "")
    found = RECOGNISERS[program](stdout, now, UTC)
    assert (found.kind if found else None) is kind
    if reset_in is not None:
        assert found is not None
        # The fake reads its own clock between `now` and `after`: a minute may turn meanwhile.
        expected = {end_of_minute(at + timedelta(seconds=reset_in)) for at in (now, after)}
        assert found.retry_at in expected


def test_the_fake_codex_can_reconnect_before_it_gives_up() -> None:
    _, stdout, _ = run_fake("codex", "retry_limit_429", FAKE_CLI_RECONNECTS="5")
    messages = [json.loads(line).get("message") for line in stdout.splitlines()]
    assert sum(1 for m in messages if m and m.startswith("Reconnecting... ")) == 5
    assert codex_limit(stdout, NOW, UTC) == LimitSignal(
        RATE, "exceeded retry limit, last status: 429 Too Many Requests"
    )


def test_a_wait_after_a_fake_usage_limit_is_at_most_a_minute_past_the_reset() -> None:
    now = datetime.now(UTC)
    _, stdout, _ = run_fake("claude", "five_hour", 300)
    found = claude_limit(stdout, now, UTC)
    assert found is not None
    assert 240 <= wait_until(found, now, 21600, 60).secs <= math.ceil(300 + 60)
