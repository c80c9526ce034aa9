"""The iteration limit ends the loop as every other limit does: `status=limit` with a
`limit_reached` event (kind `iterations`) that fires `on_limit`; and a wait after the last
iteration the limit allows is not waited out, since no step would follow it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.loop.events import EventOrigin, EventType, event_to_json
from runner_core.loop.policy import (
    ITERATIONS_LIMIT_KIND,
    LoopState,
    StepKind,
    StepResult,
    Stop,
    Wait,
    after_step,
    decision_events,
    ends_the_loop,
)
from runner_core.run.config import LoopConfig
from tests.helpers import SCHEMAS

NOW = datetime(2025, 1, 1, tzinfo=UTC)
CONFIG = LoopConfig()
ERROR = StepResult(StepKind.RUNNER_ERROR, "root", error="executor agent exited with status 5")
LIMITED = StepResult(
    StepKind.LIMITED, "root", limit=LimitSignal(LimitKind.RATE_LIMITED, "slow down"), error="x"
)
ORIGIN = EventOrigin("run-1", 3, "root", "2025-01-01T00:00:00Z")
SCHEMA = json.loads((SCHEMAS / "events.schema.json").read_text(encoding="utf-8"))


def test_the_iteration_limit_fires_limit_reached_and_on_limit() -> None:
    decision = after_step(LoopState(), StepResult(StepKind.ITERATION_LIMIT), CONFIG, NOW)

    assert isinstance(decision, Stop)
    assert (decision.exit_code, decision.status) == (1, "limit")
    assert decision.events == (EventType.LIMIT_REACHED,)
    assert decision.hooks == ("on_limit",)


def test_a_runner_error_on_the_last_iteration_stops_at_the_limit_without_waiting() -> None:
    decision = after_step(LoopState(), ERROR, CONFIG, NOW, iterations_left=0)

    assert isinstance(decision, Stop)
    assert (decision.exit_code, decision.status) == (1, "limit")
    assert decision.events == (EventType.RUNNER_ERROR, EventType.LIMIT_REACHED)
    assert decision.hooks == ("on_error", "on_limit")
    assert decision.state.consecutive_runner_errors == 1


def test_a_runner_error_with_an_iteration_left_still_waits() -> None:
    decision = after_step(LoopState(), ERROR, CONFIG, NOW, iterations_left=1)

    assert isinstance(decision, Wait)


def test_a_usage_limit_on_the_last_iteration_tells_both_limits() -> None:
    decision = after_step(LoopState(), LIMITED, CONFIG, NOW, iterations_left=0)

    built = decision_events(decision, ORIGIN, CONFIG, LIMITED, steps=1)

    assert isinstance(decision, Stop)
    assert decision.status == "limit"
    assert [(event.type, event.figures["kind"]) for event in built] == [
        (EventType.LIMIT_REACHED, "rate_limited"),
        (EventType.LIMIT_REACHED, ITERATIONS_LIMIT_KIND),
    ]


def test_the_iteration_limits_event_is_valid_and_ends_the_loop_for_follow() -> None:
    decision = after_step(LoopState(), ERROR, CONFIG, NOW, iterations_left=0)

    *_, reached = decision_events(decision, ORIGIN, CONFIG, ERROR, steps=1)

    jsonschema.validate(event_to_json(reached), SCHEMA, cls=jsonschema.Draft202012Validator)
    assert reached.figures["kind"] == "iterations"
    assert "max_iterations" in reached.figures["message"]
    assert ends_the_loop(reached)
