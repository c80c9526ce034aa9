"""What one step came to: `runner step`'s exit code, and the step as the loop's policy sees it.

Decides, from the step's plan and (when an iteration ran) its outcome, the exit code of `runner
step`, and whether the loop counts the step as a finished tree, a stuck leaf, the iteration
limit, a runner error, a usage limit or an agent run (and whether that run succeeded, which
for a stuck leaf's decomposition decides if the loop goes on). Never runs or reads anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from runner_core.backends.limits import LimitSignal
from runner_core.iteration.plan import IterationOutcome, PlanKind, StepPlan
from runner_core.loop.policy import StepKind, StepResult
from runner_core.run.exit_codes import ExitCode
from runner_core.tree.model import AgentRole, GuardOutcome

# The plans that run no iteration: `runner step`'s exit code, and the step as the loop sees it.
PLAN_EXIT_CODES: Mapping[PlanKind, ExitCode] = MappingProxyType(
    {
        PlanKind.COMPLETE: ExitCode.COMPLETE,
        PlanKind.STUCK: ExitCode.STUCK,
        PlanKind.LIMIT: ExitCode.ERROR,
    }
)
PLAN_STEP_KINDS: Mapping[PlanKind, StepKind] = MappingProxyType(
    {
        PlanKind.COMPLETE: StepKind.COMPLETE,
        PlanKind.STUCK: StepKind.STUCK,
        PlanKind.LIMIT: StepKind.ITERATION_LIMIT,
    }
)


def _ran(outcome: IterationOutcome | None) -> IterationOutcome:
    if outcome is None:
        raise ValueError("a step that ran an iteration carries the iteration's outcome")
    return outcome


def step_exit_code(kind: PlanKind, outcome: IterationOutcome | None) -> ExitCode:
    """`runner step`'s exit code: its plan's when no iteration ran, else 1 after a runner error
    and 0 after any concluded iteration (a failed guard or an agent error included), or one
    interrupted by the operator's commits, which were kept (nothing failed)."""
    if kind in PLAN_EXIT_CODES:
        return PLAN_EXIT_CODES[kind]
    ran = _ran(outcome)
    return ExitCode.ERROR if ran.runner_error is not None and not ran.operator else ExitCode.OK


def agent_run_succeeded(role: AgentRole | None, outcome: IterationOutcome) -> bool:
    """Whether an agent run succeeded as the loop counts it: a decomposition the runner accepted,
    or an execution whose guard passed. A stuck leaf's decomposition that did not succeed stops
    the loop."""
    if role is AgentRole.DECOMPOSER:
        return outcome.agent_error is None
    return outcome.guard is GuardOutcome.PASS


def loop_step_result(
    plan: StepPlan, outcome: IterationOutcome | None, limit: LimitSignal | None
) -> StepResult:
    """What the step planned as `plan` came to, as the loop's policy sees it; `outcome` is the
    iteration's (None when none ran), `limit` the usage or rate limit its agent hit."""
    if plan.kind in PLAN_STEP_KINDS:
        kind = PLAN_STEP_KINDS[plan.kind]
        return StepResult(kind, plan.node.id if kind is StepKind.STUCK else None)
    ran, node = _ran(outcome), plan.node.id
    if limit is not None:
        return StepResult(StepKind.LIMITED, node, limit=limit, error=ran.runner_error)
    if ran.operator:
        return StepResult(StepKind.OPERATOR, node)
    if ran.runner_error is not None:
        return StepResult(StepKind.RUNNER_ERROR, node, error=ran.runner_error)
    successful = agent_run_succeeded(plan.role, ran)
    return StepResult(StepKind.AGENT_RAN, node, successful=successful)
