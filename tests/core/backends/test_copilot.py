"""What GitHub Copilot CLI's JSONL events and usage file mean (docs/agent-cli-limits.md)."""

from __future__ import annotations

import json

from runner_core.backends.copilot import (
    CopilotError,
    CopilotSession,
    copilot_event,
    copilot_limit,
    copilot_usage,
)
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.backends.usage import Usage

QUOTA = "429 You exceeded your current quota; it will reset in 2s. Please try again in 2s."


def session_of(*events: dict[str, object]) -> CopilotSession:
    session = CopilotSession()
    for event in events:
        found = copilot_event(json.dumps(event))
        assert found is not None
        session = session.after(found)
    return session


def test_the_last_answer_asking_for_no_tool_is_the_final_text() -> None:
    call = {"toolCallId": "c", "name": "bash"}
    session = session_of(
        {"type": "assistant.message", "data": {"content": "running", "toolRequests": [call]}},
        {
            "type": "assistant.message",
            "data": {"content": '{"status": "done"}', "toolRequests": []},
        },
        {"type": "result", "exitCode": 0},
    )
    assert session == CopilotSession('{"status": "done"}', None, 0)
    assert copilot_event("not json") is None and copilot_event("[1]") is None


def test_a_providers_quota_429_is_a_usage_limit_waiting_its_retry_time() -> None:
    session = session_of(
        {
            "type": "session.error",
            "data": {"errorType": "rate_limit", "message": QUOTA, "statusCode": 429},
        }
    )
    assert session.error == CopilotError("rate_limit", QUOTA, 429)
    assert copilot_limit(session.error) == LimitSignal(
        LimitKind.USAGE_LIMITED, QUOTA, retry_after_secs=2
    )


def test_rate_limits_quotas_and_other_errors_are_told_apart() -> None:
    plain = copilot_limit(CopilotError("rate_limit", "429 Too Many Requests", 429))
    assert plain == LimitSignal(LimitKind.RATE_LIMITED, "429 Too Many Requests")
    spent = copilot_limit(CopilotError("quota_exhausted", "monthly premium requests used"))
    assert spent is not None and spent.kind is LimitKind.USAGE_LIMITED
    assert copilot_limit(CopilotError("authentication", "401 bad key", 401)) is None
    assert copilot_limit(None) is None


def test_the_usage_file_s_models_are_summed_and_garbage_is_no_usage() -> None:
    usage = {"inputTokens": 2400, "outputTokens": 90, "cacheReadTokens": 600}
    text = json.dumps({"modelMetrics": {"a": {"usage": usage}, "b": {"usage": usage}}})
    assert copilot_usage(text) == Usage(4800, 180, 1200)
    assert copilot_usage(None) == Usage()
    assert copilot_usage("{") == Usage()
    assert copilot_usage(json.dumps({"modelMetrics": {"a": {"usage": {"inputTokens": -1}}}})) == (
        Usage()
    )
