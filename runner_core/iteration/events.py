"""What the loop sees of one step: the events an iteration produces and what the step came to.

Decides, from the machine's effect before the shell performs it and the result fed back after,
the iteration's events of `events.jsonl` (iteration, agent and guard started/finished, the
`operator` event of a node command); and, from the step's plan and outcome, `runner step`'s exit
code and the step as the loop's policy counts it. Never reads the clock or writes a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from runner_core.backends.limits import LimitSignal
from runner_core.history.records import record_to_meta
from runner_core.iteration.effects import (
    AgentFinished,
    Finished,
    GuardFinished,
    NotStarted,
    PrepareIterationDir,
    Result,
    RunAgent,
    RunGuard,
)
from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.guard_stage import GuardRun
from runner_core.iteration.machine import IterationMachine
from runner_core.iteration.plan import IterationOutcome, PlanKind, StepPlan, guard_outcome
from runner_core.loop.events import (
    REPORTED,
    Event,
    EventOrigin,
    agent_finished,
    agent_started,
    guard_finished,
    guard_started,
    iteration_finished,
    iteration_started,
    operator,
)
from runner_core.loop.policy import StepKind, StepResult
from runner_core.run.config import RATCHET
from runner_core.run.exit_codes import ExitCode
from runner_core.run.operator_actions import OperatorAction, action_text
from runner_core.tree.model import AgentRole, GuardOutcome


def origin(facts: IterationFacts, at: str) -> EventOrigin:
    """The envelope of this iteration's events at `at` (ISO-8601 UTC)."""
    return EventOrigin(facts.run_id, facts.plan.iteration, facts.node.id, at)


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000), 0)


def before_effect(machine: IterationMachine, at: str, backend: str) -> tuple[Event, ...]:
    """The events of the effect the shell is about to perform."""
    facts, effect = machine.facts, machine.effect
    here = origin(facts, at)
    if isinstance(effect, PrepareIterationDir):
        node = facts.node
        return (iteration_started(here, facts.role.value, node.attempts, node.max_attempts),)
    if isinstance(effect, RunAgent):
        return (agent_started(here, effect.role.value, backend),)
    if isinstance(effect, RunGuard):
        return (guard_started(here, effect.argv),)
    return ()


def after_result(
    machine: IterationMachine, result: Result, at: str, elapsed_secs: float
) -> tuple[Event, ...]:
    """The events of `result`, fed back for the machine's effect; `elapsed_secs` is how long
    the effect took. A process that could not start has finished with no exit code."""
    effect, here = machine.effect, origin(machine.facts, at)
    if isinstance(effect, RunAgent) and isinstance(result, AgentFinished | NotStarted):
        code = result.exit_code if isinstance(result, AgentFinished) else None
        return (agent_finished(here, code, _ms(elapsed_secs)),)
    if isinstance(effect, RunGuard) and isinstance(result, GuardFinished):
        outcome = _run_outcome(machine, effect, result)
        run = effect.purpose.value
        return (guard_finished(here, outcome, result.exit_code, _ms(elapsed_secs), run),)
    if isinstance(effect, RunGuard) and isinstance(result, NotStarted):  # as its record says
        skipped = GuardOutcome.SKIPPED.value
        return (guard_finished(here, skipped, None, _ms(elapsed_secs), effect.purpose.value),)
    return ()


def _run_outcome(machine: IterationMachine, effect: RunGuard, result: GuardFinished) -> str:
    """What one guard run says by itself: in exit mode its exit code is the verdict; a ratchet
    (and a baseline or rerun) is judged by its report, so its exit code says nothing yet and
    the verdict is the iteration's, in iteration_finished."""
    by_exit = effect.purpose is GuardRun.JUDGE and machine.facts.config.guard_mode != RATCHET
    if by_exit or result.timed_out:
        return guard_outcome(result.exit_code, result.timed_out).value
    return REPORTED


def finished(machine: IterationMachine, at: str) -> tuple[Event, ...]:
    """iteration_finished, once the machine has committed."""
    effect = machine.effect
    if not isinstance(effect, Finished):
        return ()
    return (iteration_finished(origin(machine.facts, at), record_to_meta(effect.record)),)


def operator_event(action: OperatorAction, at: str) -> Event:
    """`runner node <op>` recorded in the run's stream, at the iteration it comes before."""
    here = EventOrigin(action.run_id, action.before_iteration, action.node_id, at)
    return operator(here, f"node {action.op.value}", action_text(action))


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
