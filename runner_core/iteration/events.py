"""Which events of `events.jsonl` an iteration produces, step by step of its machine.

Decides, from the machine's effect before the shell performs it and the result fed back after,
the iteration's events: iteration_started, agent_started/finished, guard_started/finished and
iteration_finished (its meta record); and the `operator` event of a node command. Never reads
the clock or writes the file: the shell passes its clock reading and appends what comes back.
"""

from __future__ import annotations

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
from runner_core.iteration.guard_stage import RATCHET, GuardRun
from runner_core.iteration.machine import IterationMachine
from runner_core.iteration.plan import guard_outcome
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
from runner_core.run.operator_actions import OperatorAction, action_text
from runner_core.tree.model import GuardOutcome


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
