"""`runner loop` for a night: step, then carry out what runner_core.loop.policy decides.

Before each step a reached `[budget]` ends the loop; after it the policy says go on, wait (a
runner error's backoff, a usage or rate limit), hand a stuck leaf to the decomposer, or stop.
The loop's events go to the run's `events.jsonl` and fire their hooks. A signal during an agent,
a guard or a wait ends the loop with 128 + its number once the iteration is committed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import attrs

from runner_core.iteration.plan import PlanKind
from runner_core.loop import policy as policy
from runner_core.loop.events import EventOrigin
from runner_core.loop.usage_limits import iso_utc
from runner_core.run.config import Config
from runner_core.run.exit_codes import ExitCode
from runner_core.run.operations import NodeOperation, decompose_later
from runner_core.run.state import RunState
from runner_core.tree.model import AgentRole, GuardOutcome
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.loop.night import (
    Interrupted,
    Interrupts,
    budget_summary,
    signals_handled,
    sink_for,
    sleep_interruptibly,
)
from runner_shell.steer.commits import apply_holding_lock
from runner_shell.step.runner import StepResult, run_step, step_result_line
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state

Emit = Callable[[str], None]


@attrs.frozen(slots=True)
class LoopRun:
    """What one `runner loop` is: where it writes and how it started."""

    paths: RunnerPaths
    repo: Repo
    prompt_budget: int
    emit: Emit
    started_at: int


def _now() -> datetime:
    return datetime.now(UTC)


def policy_result(result: StepResult) -> policy.StepResult:
    """What the step came to, as the loop's policy sees it."""
    plan = result.plan
    if result.kind is PlanKind.COMPLETE:
        return policy.StepResult(policy.StepKind.COMPLETE)
    if result.kind is PlanKind.STUCK:
        return policy.StepResult(policy.StepKind.STUCK, plan.node.id)
    if result.kind is PlanKind.LIMIT:
        return policy.StepResult(policy.StepKind.ITERATION_LIMIT)
    outcome = result.outcome
    assert outcome is not None
    node = plan.node.id
    if result.limit is not None:
        error = outcome.runner_error
        return policy.StepResult(policy.StepKind.LIMITED, node, limit=result.limit, error=error)
    if outcome.runner_error is not None:
        return policy.StepResult(policy.StepKind.RUNNER_ERROR, node, error=outcome.runner_error)
    if plan.role is AgentRole.DECOMPOSER:
        successful = outcome.agent_error is None
    else:
        successful = outcome.guard is GuardOutcome.PASS
    return policy.StepResult(policy.StepKind.AGENT_RAN, node, successful=successful)


def run_night_loop(run: LoopRun, progress: Callable[[], None] | None, max_steps: int | None) -> int:
    """Step until the policy stops the loop; see the module's docstring."""
    with signals_handled():
        try:
            return _steps(run, progress, max_steps)
        except Interrupted as signal_:
            return _interrupted(run, signal_.exit_code)


def _interrupted(run: LoopRun, code: int) -> int:
    run.emit(policy.interrupted_line(load_run_state(run.paths).run_id, code))
    return code


def _origin(run_id: str, iteration: int) -> EventOrigin:
    """Where a loop event happens: the step's iteration, else the next one, at this time."""
    return EventOrigin(run_id, iteration, None, iso_utc(_now()))


def _steps(run: LoopRun, progress: Callable[[], None] | None, max_steps: int | None) -> int:
    state, steps = policy.LoopState(), 0
    while True:
        if progress is not None:
            progress()
        run_state, config = load_run_state(run.paths), load_config(run.paths)
        code = _budget_stop(run, run_state, config, state, steps)
        if code is not None:
            return code
        result = run_step(run.paths, run.repo, run.prompt_budget)
        if result.kind is PlanKind.RUN:
            steps += 1
            run.emit(step_result_line("loop: step", result))
        pending = Interrupts.exit_code()
        if pending is not None:
            return _interrupted(run, pending)
        step = policy_result(result)
        ran = result.kind is PlanKind.RUN
        left = config.max_iterations - result.plan.iteration if ran else None
        decision = policy.after_step(
            state, step, config.loop, _now(), steps=steps, max_steps=max_steps, iterations_left=left
        )
        # A step's plan holds its iteration, or the next one when no agent ran.
        origin = attrs.evolve(_origin(result.run_id, result.plan.iteration), node_id=step.node_id)
        sink_for(run.paths, config, result.run_id).emit(
            policy.decision_events(decision, origin, config.loop, step, steps), fsync=True
        )
        state = decision.state
        if decision.action is policy.LoopAction.STOP:
            return _stopped(run, config, result, decision, steps)
        if decision.action is policy.LoopAction.WAIT:
            assert decision.wait is not None
            run.emit(policy.wait_line(result.run_id, decision.wait, decision.wait_reason or ""))
            sleep_interruptibly(decision.wait.secs)
        elif decision.action is policy.LoopAction.DECOMPOSE:
            assert decision.node_id is not None
            _hand_to_decomposer(run, decision.node_id)


def _budget_stop(
    run: LoopRun, run_state: RunState, config: Config, state: policy.LoopState, steps: int
) -> int | None:
    """The loop's exit code when a reached `[budget]` stops it before the next step."""
    run_id = run_state.run_id
    if run_id is None:
        return None  # the step reports that there is no run
    summary = budget_summary(run.paths, config, run_id)
    decision = policy.before_step(config.budget, summary, state)
    if decision.action is not policy.LoopAction.STOP:
        return None
    assert decision.budget is not None
    origin = _origin(run_id, run_state.next_iter)
    sink_for(run.paths, config, run_id).emit(
        policy.decision_events(decision, origin, config.loop, None, steps), fsync=True
    )
    run.emit(policy.budget_line(run_id, decision.budget, steps, run.started_at))
    return _exit_code(decision)


def _exit_code(decision: policy.LoopDecision) -> int:
    return decision.exit_code if decision.exit_code is not None else ExitCode.ERROR


def _stopped(
    run: LoopRun, config: Config, result: StepResult, decision: policy.LoopDecision, steps: int
) -> int:
    run_id, plan = result.run_id, result.plan
    if decision.status == "complete":
        run.emit(policy.complete_line(run_id, steps, run.started_at))
    elif decision.status == "stuck":
        node, path = plan.node, str(plan.selection.path)
        run.emit(policy.stuck_line(run_id, node.id, path, node.attempts, node.max_attempts))
    elif decision.status == "limit":
        maximum = config.max_iterations
        # After the last iteration's runner error the plan is that iteration's, not the next.
        next_iter = load_run_state(run.paths).next_iter
        run.emit(policy.limit_line(run_id, next_iter, maximum, steps, run.started_at))
    elif decision.status == policy.MAX_STEPS_STATUS:
        run.emit(policy.max_steps_line(run_id, steps, run.started_at))
    elif decision.status == "runner_error":
        assert result.outcome is not None
        raise UserFacingError(f"runner error: {result.outcome.runner_error}")
    return _exit_code(decision)


def _hand_to_decomposer(run: LoopRun, node_id: str) -> None:
    """`on_stuck = "decompose"`: the leaf's next iteration is the decomposer's, committed and
    told as the operator's `node decompose` is (the loop already holds the lock)."""
    apply_holding_lock(
        run.paths,
        run.repo,
        NodeOperation.DECOMPOSE,
        node_id,
        lambda tree, _max_attempts: decompose_later(tree, node_id),
    )
