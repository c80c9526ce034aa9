"""What `runner loop` does after each step: go on, wait, decompose once, or stop."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.history.records import ExecutionHistory, summarize
from runner_core.loop import events
from runner_core.loop.budget import BudgetUse
from runner_core.loop.events import EventOrigin, EventType
from runner_core.loop.policy import (
    HOOK_FOR_EVENT,
    Continue,
    Decompose,
    LoopDecision,
    LoopState,
    StepKind,
    StepResult,
    Stop,
    Wait,
    after_step,
    before_step,
    decision_events,
    ends_the_loop,
    runner_error_backoff,
)
from runner_core.loop.usage_limits import LimitWait
from runner_core.run.config import HOOK_NAMES, BudgetConfig, LoopConfig
from runner_core.views.follow import event_text
from tests.helpers.records import record

NOW = datetime(2026, 11, 22, 2, 0, 0, tzinfo=UTC)
CONFIG = LoopConfig()
AGENT_RAN = StepResult(StepKind.AGENT_RAN, "root.1", successful=True)
RUNNER_ERROR = StepResult(StepKind.RUNNER_ERROR, "root.1")


def stopped(decision: LoopDecision) -> Stop:
    """`decision`, which must be a Stop."""
    assert isinstance(decision, Stop), decision
    return decision


def waiting(decision: LoopDecision) -> Wait:
    """`decision`, which must be a Wait."""
    assert isinstance(decision, Wait), decision
    return decision


def run_steps(
    results: list[StepResult], config: LoopConfig = CONFIG, state: LoopState | None = None
) -> list[tuple[type[LoopDecision], int | None]]:
    """The (decision's case, exit code) after each result, carrying the state along."""
    state = state or LoopState()
    seen: list[tuple[type[LoopDecision], int | None]] = []
    for result in results:
        decision = after_step(state, result, config, NOW)
        seen.append((type(decision), decision.exit_code if isinstance(decision, Stop) else None))
        state = decision.state
    return seen


def test_an_agent_run_goes_on_without_events() -> None:
    decision = after_step(LoopState(), AGENT_RAN, CONFIG, NOW)
    assert (type(decision), decision.events, decision.hooks) == (Continue, (), ())


def test_a_runner_error_waits_the_first_backoff_and_fires_on_error_and_on_wait() -> None:
    decision = waiting(after_step(LoopState(), RUNNER_ERROR, CONFIG, NOW))
    assert decision.wait == LimitWait(30, "2026-11-22T02:00:30Z", False)
    assert decision.reason == "runner_error"
    assert decision.events == (EventType.RUNNER_ERROR, EventType.WAITING)
    assert decision.hooks == ("on_error", "on_wait")
    assert decision.state.consecutive_runner_errors == 1


@pytest.mark.parametrize(
    ("consecutive", "secs"), [(1, 30), (2, 120), (3, 600), (4, 600), (50, 600)]
)
def test_the_backoff_follows_the_schedule_and_its_last_entry_repeats(
    consecutive: int, secs: int
) -> None:
    assert runner_error_backoff(LoopConfig(max_consecutive_runner_errors=100), consecutive) == secs


def test_the_backoff_is_capped_at_max_wait_secs() -> None:
    assert runner_error_backoff(LoopConfig(max_wait_secs=100), 3) == 100


def test_the_third_runner_error_in_a_row_stops_with_exit_1() -> None:
    assert run_steps([RUNNER_ERROR] * 3) == [
        (Wait, None),
        (Wait, None),
        (Stop, 1),
    ]


def test_the_stopping_runner_error_fires_on_error_without_a_wait() -> None:
    state = LoopState(consecutive_runner_errors=2)
    decision = stopped(after_step(state, RUNNER_ERROR, CONFIG, NOW))
    assert (decision.status, decision.events) == ("runner_error", (EventType.RUNNER_ERROR,))


@pytest.mark.parametrize("limit", [0, 1])
def test_zero_or_one_allowed_runner_errors_stop_at_the_first(limit: int) -> None:
    config = LoopConfig(max_consecutive_runner_errors=limit)
    assert run_steps([RUNNER_ERROR], config) == [(Stop, 1)]


def test_an_agent_run_resets_the_count_of_runner_errors() -> None:
    steps = [RUNNER_ERROR, RUNNER_ERROR, AGENT_RAN, RUNNER_ERROR, RUNNER_ERROR, RUNNER_ERROR]
    assert [action for action, _ in run_steps(steps)] == [
        Wait,
        Wait,
        Continue,
        Wait,
        Wait,
        Stop,
    ]


def test_the_operators_kept_commit_goes_on_at_once_and_counts_as_no_runner_error() -> None:
    # An iteration interrupted by the operator's commits on the run branch (kept): nothing
    # failed, so no backoff, no event, and a streak of runner errors neither grows nor ends.
    operator = StepResult(StepKind.OPERATOR, "root.1")
    decision = after_step(LoopState(consecutive_runner_errors=2), operator, CONFIG, NOW)
    assert (type(decision), decision.events, decision.hooks) == (Continue, (), ())
    assert decision.state == LoopState(consecutive_runner_errors=2)
    assert run_steps([operator] * 5) == [(Continue, None)] * 5


def test_a_failed_agent_run_also_ends_a_streak_of_runner_errors() -> None:
    failed = StepResult(StepKind.AGENT_RAN, "root.1", successful=False)
    state = LoopState(consecutive_runner_errors=2)
    assert after_step(state, failed, CONFIG, NOW).state.consecutive_runner_errors == 0


LIMITED = StepResult(
    StepKind.LIMITED,
    "root.1",
    limit=LimitSignal(LimitKind.USAGE_LIMITED, "m", retry_at="2026-11-22T03:00:00Z"),
)


def test_a_limit_waits_until_its_reset_and_fires_on_limit_and_on_wait() -> None:
    decision = waiting(after_step(LoopState(), LIMITED, CONFIG, NOW))
    assert decision.wait == LimitWait(3600, "2026-11-22T03:00:00Z", False)
    assert decision.reason == "usage_limited"
    assert decision.hooks == ("on_limit", "on_wait")


def test_waits_neither_count_as_nor_reset_runner_errors() -> None:
    steps = [RUNNER_ERROR, LIMITED, LIMITED, RUNNER_ERROR, LIMITED, RUNNER_ERROR]
    assert run_steps(steps)[-1] == (Stop, 1)
    assert after_step(LoopState(2), LIMITED, CONFIG, NOW).state == LoopState(2)


@pytest.mark.parametrize(
    ("kind", "secs"), [(LimitKind.RATE_LIMITED, 300), (LimitKind.USAGE_LIMITED, 1800)]
)
def test_a_limit_without_a_time_waits_its_default(kind: LimitKind, secs: int) -> None:
    result = StepResult(StepKind.LIMITED, "root.1", limit=LimitSignal(kind, "m"))
    decision = waiting(after_step(LoopState(), result, CONFIG, NOW))
    assert decision.wait.secs == secs


def test_a_limit_wait_is_capped_at_max_wait_secs() -> None:
    decision = waiting(after_step(LoopState(), LIMITED, LoopConfig(max_wait_secs=60), NOW))
    assert decision.wait == LimitWait(60, "2026-11-22T02:01:00Z", True)


@pytest.mark.parametrize(
    ("result", "told"),
    [
        (RUNNER_ERROR, (EventType.RUNNER_ERROR,)),
        (LIMITED, (EventType.LIMIT_REACHED,)),
        (AGENT_RAN, ()),
    ],
    ids=["runner_error", "limited", "agent_ran"],
)
def test_with_its_max_steps_taken_the_loop_stops_with_exit_0_and_never_waits(
    result: StepResult, told: tuple[EventType, ...]
) -> None:
    decision = stopped(after_step(LoopState(), result, CONFIG, NOW, steps=2, max_steps=2))
    assert (decision.exit_code, decision.status) == (0, "max-steps")
    assert decision.events == told


def test_steps_left_under_max_steps_change_nothing() -> None:
    assert after_step(LoopState(), LIMITED, CONFIG, NOW, steps=1, max_steps=2) == after_step(
        LoopState(), LIMITED, CONFIG, NOW
    )


def test_complete_stops_with_exit_0_and_fires_on_complete() -> None:
    decision = stopped(after_step(LoopState(), StepResult(StepKind.COMPLETE), CONFIG, NOW))
    assert (decision.exit_code, decision.status) == (0, "complete")
    assert decision.hooks == ("on_complete",)


def test_the_iteration_limit_stops_with_exit_1_and_the_on_limit_hook() -> None:
    decision = stopped(after_step(LoopState(), StepResult(StepKind.ITERATION_LIMIT), CONFIG, NOW))
    assert (decision.exit_code, decision.status) == (1, "limit")
    assert decision.hooks == ("on_limit",)


STUCK = StepResult(StepKind.STUCK, "root.1")
DECOMPOSE = LoopConfig(on_stuck="decompose")


def test_with_on_stuck_stop_a_stuck_leaf_stops_with_exit_3() -> None:
    decision = stopped(after_step(LoopState(), STUCK, CONFIG, NOW))
    assert (decision.exit_code, decision.status) == (3, "stuck")
    assert (decision.node_id, decision.hooks) == ("root.1", ("on_stuck",))


def test_with_on_stuck_decompose_a_stuck_leaf_goes_to_the_decomposer() -> None:
    decision = after_step(LoopState(), STUCK, DECOMPOSE, NOW)
    assert isinstance(decision, Decompose)
    assert (decision.node_id, decision.hooks) == ("root.1", ("on_stuck",))
    assert decision.state.decomposing == "root.1"


def test_a_decomposed_leaf_that_is_stuck_again_stops() -> None:
    steps = [STUCK, AGENT_RAN, STUCK]
    assert run_steps(steps, DECOMPOSE) == [
        (Decompose, None),
        (Continue, None),
        (Stop, 3),
    ]


def test_a_failed_decomposition_of_a_stuck_leaf_stops() -> None:
    failed = StepResult(StepKind.AGENT_RAN, "root.1", successful=False)
    assert run_steps([STUCK, failed], DECOMPOSE) == [
        (Decompose, None),
        (Stop, 3),
    ]


def test_a_runner_error_during_the_decomposition_tries_it_again() -> None:
    assert run_steps([STUCK, RUNNER_ERROR, STUCK, AGENT_RAN], DECOMPOSE) == [
        (Decompose, None),
        (Wait, None),
        (Decompose, None),
        (Continue, None),
    ]


def test_each_stuck_leaf_is_decomposed_once() -> None:
    other = StepResult(StepKind.STUCK, "root.2")
    other_done = StepResult(StepKind.AGENT_RAN, "root.2", successful=True)
    steps = [STUCK, AGENT_RAN, other, other_done, STUCK]
    assert [action for action, _ in run_steps(steps, DECOMPOSE)] == [
        Decompose,
        Continue,
        Decompose,
        Continue,
        Stop,
    ]


def test_an_unspent_budget_lets_the_step_run() -> None:
    summary = summarize(ExecutionHistory.of([record(1, cost_usd=1.0)]))
    decision = before_step(BudgetConfig(max_cost_usd=2.0), summary, LoopState())
    assert isinstance(decision, Continue)


def test_a_reached_budget_stops_before_the_step_with_exit_1_and_fires_on_budget() -> None:
    summary = summarize(ExecutionHistory.of([record(1, cost_usd=2.0)]))
    decision = stopped(before_step(BudgetConfig(max_cost_usd=2.0), summary, LoopState()))
    assert (decision.exit_code, decision.status) == (1, "budget")
    assert decision.budget == BudgetUse("cost_usd", 2.0, 2.0)
    assert decision.hooks == ("on_budget",)


def test_every_hook_has_exactly_one_event_type() -> None:
    assert sorted(HOOK_FOR_EVENT.values()) == sorted(HOOK_NAMES)


ORIGIN = EventOrigin("run-1", 3, "root.1", "2026-11-22T02:00:00Z")


@pytest.mark.parametrize(
    ("event", "ends"),
    [
        (events.complete(ORIGIN, 3), True),
        (events.budget_exhausted(ORIGIN, "tokens", 10, 10), True),
        (events.stuck(ORIGIN, "stop"), True),
        (events.stuck(ORIGIN, "decompose"), False),
        (events.runner_error(ORIGIN, "agent_timeout", 3, 3), True),
        (events.runner_error(ORIGIN, "agent_timeout", 2, 3), False),
        (events.runner_error(ORIGIN, "agent_timeout", 1, 0), True),
        (events.waiting(ORIGIN, "runner_error", "2026-11-22T02:00:30Z", 30), False),
        (events.iteration_started(ORIGIN, "executor", 0, 3), False),
    ],
    ids=lambda value: value if isinstance(value, bool) else value.type.value,
)
def test_a_follower_knows_which_events_end_the_loop(event: events.Event, ends: bool) -> None:
    assert ends_the_loop(event) is ends


def test_the_stop_decision_and_its_event_agree_on_ending_the_loop() -> None:
    for consecutive in range(1, 5):
        state = LoopState(consecutive_runner_errors=consecutive - 1)
        decision = after_step(state, RUNNER_ERROR, CONFIG, NOW)
        event = events.runner_error(ORIGIN, "x", consecutive, CONFIG.max_consecutive_runner_errors)
        assert ends_the_loop(event) == isinstance(decision, Stop)


def test_a_runner_error_that_stops_at_the_first_is_followed_as_1_of_1() -> None:
    config = LoopConfig(max_consecutive_runner_errors=0)
    failed = StepResult(StepKind.RUNNER_ERROR, "root.1", error="agent_timeout")
    decision = after_step(LoopState(), failed, config, NOW)
    (event,) = decision_events(decision, ORIGIN, config, failed, 1)
    assert event_text(event) == (
        "loop: runner_error run=run-1 iter=3 node=root.1 consecutive=1/1 error=agent_timeout",
    )
    assert ends_the_loop(event)


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            events.waiting(ORIGIN, "rate_limited", "2026-11-22T02:00:30Z", 30),
            "loop: wait run=run-1 reason=rate_limited until=2026-11-22T02:00:30Z secs=30",
        ),
        (events.stuck(ORIGIN, "stop"), "loop: status=stuck run=run-1 id=root.1 action=stop"),
        (
            events.budget_exhausted(ORIGIN, "wall_secs", 3600.123456, 3600.0),
            "loop: status=budget run=run-1 budget=wall_secs spent=3600.1235 limit=3600",
        ),
        (events.complete(ORIGIN, 4), "loop: status=complete run=run-1 steps=4"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.type.value,
)
def test_follow_shows_the_loop_s_events_as_its_lines_without_its_own_figures(
    event: events.Event, line: str
) -> None:
    assert event_text(event) == (line,)
