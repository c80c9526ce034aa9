"""What a step came to: `runner step`'s exit code, and the step as the loop's policy sees it."""

from __future__ import annotations

import attrs
import pytest

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.iteration.events import loop_step_result, step_exit_code
from runner_core.iteration.plan import IterationOutcome, PlanKind, StepPlan, plan_step
from runner_core.loop.policy import StepKind, StepResult
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, GuardOutcome, Node
from tests.helpers.trees import tree

LEAF = tree("root")
STUCK_LEAF = tree("root", attempts=3, max_attempts=3)
DECOMPOSABLE = tree("root", next="decompose")


def plan_for(root: Node, next_iter: int = 1) -> StepPlan:
    return plan_step(root, RunState(next_iter=next_iter), 10)


def outcome(
    guard: GuardOutcome = GuardOutcome.PASS,
    agent_error: str | None = None,
    runner_error: str | None = None,
) -> IterationOutcome:
    return IterationOutcome(LEAF, AgentStatus.DONE, guard, "s", None, agent_error, runner_error)


@pytest.mark.parametrize(
    ("plan", "ran", "code"),
    [
        (plan_for(tree("root", passes=True)), None, 2),
        (plan_for(STUCK_LEAF), None, 3),
        (plan_for(LEAF, next_iter=11), None, 1),
        (plan_for(LEAF), outcome(), 0),
        (plan_for(LEAF), outcome(GuardOutcome.FAIL), 0),
        (plan_for(LEAF), outcome(agent_error="bad output"), 0),
        (plan_for(LEAF), outcome(runner_error="agent_timeout"), 1),
    ],
    ids=["complete", "stuck", "limit", "passed", "guard_failed", "agent_error", "runner_error"],
)
def test_a_step_exits_with_its_plan_s_code_or_1_after_a_runner_error(
    plan: StepPlan, ran: IterationOutcome | None, code: int
) -> None:
    assert step_exit_code(plan.kind, ran) == code


def test_an_iteration_the_operators_commits_interrupted_exits_0_and_is_no_runner_error() -> None:
    kept = attrs.evolve(
        outcome(GuardOutcome.SKIPPED, runner_error="interrupted: ..."), operator=True
    )

    assert step_exit_code(PlanKind.RUN, kept) == 0
    assert loop_step_result(plan_for(LEAF), kept, None) == StepResult(StepKind.OPERATOR, "root")


def test_a_step_that_ran_an_iteration_has_its_outcome() -> None:
    with pytest.raises(ValueError, match="outcome"):
        step_exit_code(PlanKind.RUN, None)


@pytest.mark.parametrize(
    ("plan", "result"),
    [
        (plan_for(tree("root", passes=True)), StepResult(StepKind.COMPLETE)),
        (plan_for(STUCK_LEAF), StepResult(StepKind.STUCK, "root")),
        (plan_for(LEAF, next_iter=11), StepResult(StepKind.ITERATION_LIMIT)),
    ],
    ids=["complete", "stuck", "limit"],
)
def test_a_step_that_ran_no_iteration_is_what_its_plan_found(
    plan: StepPlan, result: StepResult
) -> None:
    assert loop_step_result(plan, None, None) == result


@pytest.mark.parametrize(
    ("root", "ran", "successful"),
    [
        (LEAF, outcome(GuardOutcome.PASS), True),
        (LEAF, outcome(GuardOutcome.FAIL), False),
        (LEAF, outcome(GuardOutcome.SKIPPED, agent_error="bad output"), False),
        (DECOMPOSABLE, outcome(GuardOutcome.SKIPPED), True),
        (DECOMPOSABLE, outcome(GuardOutcome.SKIPPED, agent_error="no children"), False),
    ],
    ids=["guard_passed", "guard_failed", "agent_error", "decomposed", "decomposition_refused"],
)
def test_an_execution_succeeds_when_its_guard_passes_a_decomposition_when_accepted(
    root: Node, ran: IterationOutcome, successful: bool
) -> None:
    result = loop_step_result(plan_for(root), ran, None)
    assert result == StepResult(StepKind.AGENT_RAN, "root", successful=successful)


def test_a_runner_error_is_told_to_the_loop_with_its_message() -> None:
    result = loop_step_result(plan_for(LEAF), outcome(runner_error="agent_timeout"), None)
    assert result == StepResult(StepKind.RUNNER_ERROR, "root", error="agent_timeout")


def test_a_usage_limit_is_a_limited_step_whatever_else_happened() -> None:
    limit = LimitSignal(LimitKind.RATE_LIMITED, "slow down")
    ran = outcome(runner_error="rate_limited")
    result = loop_step_result(plan_for(LEAF), ran, limit)
    assert result == StepResult(StepKind.LIMITED, "root", limit=limit, error="rate_limited")
