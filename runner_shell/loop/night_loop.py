"""`runner loop` for a night: step, then carry out what runner_core.loop.policy decides.

Before each step a reached `[budget]` ends the loop; after it the policy says go on, wait (a
runner error's backoff, a usage or rate limit), hand a stuck leaf to the decomposer, or stop.
The loop's events go to the run's `events.jsonl` and fire their hooks. A signal during an agent,
a guard or a wait ends the loop with 128 + its number once the iteration is committed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import assert_never

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.iteration.events import loop_step_result
from runner_core.iteration.plan import PlanKind, RunPlan, plan_step
from runner_core.loop import policy as policy
from runner_core.loop.budget import BudgetUse
from runner_core.loop.events import EventOrigin, loop_started
from runner_core.loop.fallback import backend_chain, choose_backend, fall_back
from runner_core.loop.usage_limits import wait_until
from runner_core.run.config import Config
from runner_core.run.operations import NodeOperation, decompose_later
from runner_core.run.role_agents import role_config
from runner_core.run.state import RunState
from runner_core.views import loop_lines
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.loop.questions import announce_new_questions, read_questions
from runner_shell.signals import (
    Interrupted,
    Interrupts,
    signals_handled,
    sleep_interruptibly,
)
from runner_shell.steer.commits import apply_holding_lock
from runner_shell.steer.stop import clear_stop_request, pause_if_requested
from runner_shell.step.budgets import budget_summary
from runner_shell.step.event_sink import sink_for
from runner_shell.step.runner import (
    Loaded,
    StepRan,
    StepResult,
    load_for_step,
    run_step,
    step_result_line,
)
from runner_shell.store.event_log import EventLogRefused
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


def loop_now() -> datetime:
    return datetime.now(UTC)


def run_night_loop(run: LoopRun, progress: Callable[[], None] | None, max_steps: int | None) -> int:
    """Step until the policy stops the loop; see the module's docstring."""
    with signals_handled():
        try:
            return _steps(run, progress, max_steps)
        except Interrupted as signal_:
            return interrupted(run, signal_.exit_code)


def interrupted(run: LoopRun, code: int) -> int:
    run.emit(loop_lines.interrupted_line(load_run_state(run.paths).run_id, code))
    return code


def loop_origin(run_id: str, iteration: int) -> EventOrigin:
    """Where a loop event happens: the step's iteration, else the next one, at this time."""
    return EventOrigin(run_id, iteration, None, iso_utc(loop_now()))


def announce_start(run: LoopRun) -> None:
    """The `loop_started` event, where `runner follow` begins its replay of this loop; an
    `events.jsonl` that cannot take it is the step's to report."""
    run_id = load_run_state(run.paths).run_id
    if run_id is None:
        return  # the step reports that there is no run
    with contextlib.suppress(EventLogRefused):
        sink = sink_for(run.paths, load_config(run.paths), run_id)
        sink.emit((loop_started(loop_origin(run_id, run.started_at)),), fsync=True)


def _tell_step(run: LoopRun, config: Config, result: StepRan, asked: str | None) -> None:
    """A step's loop line, the operator's change it kept (told once), its new questions."""
    run.emit(step_result_line("loop: step", result))
    if result.notice is not None:
        print(f"runner: {result.notice}", file=sys.stderr, flush=True)
    announce_new_questions(run.paths, config, result.run_id, result.plan.iteration, asked)


def _steps(run: LoopRun, progress: Callable[[], None] | None, max_steps: int | None) -> int:
    state, steps = policy.LoopState(), 0
    # `[agent] fallback`: each backend's limit in force (backend -> reset, ISO-8601 UTC).
    limited: PMap[str, str] = pmap()
    clear_stop_request(run.repo)
    announce_start(run)
    while True:
        if progress is not None:
            progress()
        run_state, config = load_run_state(run.paths), load_config(run.paths)
        code = pause_if_requested(
            run.paths, run.repo, run_state, config, steps, run.started_at, run.emit
        )
        if code is None:
            code = budget_stop(run, run_state, config, state, steps)
        if code is not None:
            return code
        asked = read_questions(run.paths)
        loaded = load_for_step(run.paths, run.repo)
        chain = role_chain(loaded)
        choice = choose_backend(chain, limited, loop_now())
        if choice.backend is None and choice.wait_until is not None:
            _wait_for_first_reset(run, run_state, config, choice.wait_until)
            continue
        result = run_step(run.paths, run.repo, run.prompt_budget, loaded, choice.backend)
        if result.kind is PlanKind.RUN:
            steps += 1
            _tell_step(run, config, result, asked)
        pending = Interrupts.exit_code()
        if pending is not None:
            return interrupted(run, pending)
        step = loop_step_result(result.plan, result.outcome, result.limit)
        ran = result.kind is PlanKind.RUN
        left = config.max_iterations - result.plan.iteration if ran else None
        decision = policy.after_step(
            state,
            step,
            config.loop,
            loop_now(),
            steps=steps,
            max_steps=max_steps,
            iterations_left=left,
        )
        # A step's plan holds its iteration, or the next one when no agent ran.
        origin = attrs.evolve(
            loop_origin(result.run_id, result.plan.iteration), node_id=step.node_id
        )
        events = policy.decision_events(decision, origin, config.loop, step, steps)
        used = choice.backend or chain[0]
        fell = fall_back(chain, limited, used, decision, events, result.limit, origin)
        limited, decision, events = fell.limited, fell.decision, fell.events
        if fell.to is not None:
            run.emit(loop_lines.fallback_line(result.run_id, used, fell.to, limited[used]))
        sink_for(run.paths, config, result.run_id).emit(events, fsync=True)
        state = decision.state
        code = _carry_out(run, config, result, step, decision, steps)
        if code is not None:
            return code


def role_chain(loaded: Loaded) -> tuple[str, ...]:
    """The backend chain of the next step's role (`[agent.<role>]`, else `[agent]`): its
    backend, then its fallback; `[agent]`'s when the step runs no agent."""
    plan = plan_step(loaded.tree, loaded.state, loaded.config.max_iterations)
    config = loaded.config
    if isinstance(plan, RunPlan):
        config = role_config(config, plan.role)
    return backend_chain(config.agent_backend, config.agent_fallback)


def _wait_for_first_reset(run: LoopRun, run_state: RunState, config: Config, until: str) -> None:
    """Every backend of the chain is limited: wait for the first reset (`until`)."""
    wait = wait_until(
        LimitSignal(LimitKind.USAGE_LIMITED, "", retry_at=until),
        loop_now(),
        config.loop.max_wait_secs,
        0,
    )
    run.emit(loop_lines.wait_line(run_state.run_id or "", wait, "every_backend_limited"))
    sleep_interruptibly(wait.secs)


def _carry_out(
    run: LoopRun,
    config: Config,
    result: StepResult,
    step: policy.StepResult,
    decision: policy.LoopDecision,
    steps: int,
) -> int | None:
    """Do what the policy decided; the loop's exit code when it stops, else None."""
    match decision:
        case policy.Continue():
            pass
        case policy.Wait(wait=wait, reason=reason):
            run.emit(loop_lines.wait_line(result.run_id, wait, reason))
            sleep_interruptibly(wait.secs)
        case policy.Decompose(node_id=node_id):
            hand_to_decomposer(run, node_id)
        case policy.Stop():
            return stopped(run, config, result, step, decision, steps)
        case _:
            assert_never(decision)
    return None


def budget_stop(
    run: LoopRun, run_state: RunState, config: Config, state: policy.LoopState, steps: int
) -> int | None:
    """The loop's exit code when a reached `[budget]` stops it before the next step."""
    run_id = run_state.run_id
    if run_id is None:
        return None  # the step reports that there is no run
    summary = budget_summary(run.paths, config, run_id)
    decision = policy.before_step(config.budget, summary, state)
    match decision:
        case policy.Stop(budget=BudgetUse() as use):
            origin = loop_origin(run_id, run_state.next_iter)
            sink_for(run.paths, config, run_id).emit(
                policy.decision_events(decision, origin, config.loop, None, steps), fsync=True
            )
            run.emit(loop_lines.budget_line(run_id, use, steps, run.started_at))
            return decision.exit_code
        case _:
            return None


def stopped(
    run: LoopRun,
    config: Config,
    result: StepResult,
    step: policy.StepResult,
    stop: policy.Stop,
    steps: int,
) -> int:
    """Tell how a step's stop ended the loop (its last line, or a runner error's one line on
    stderr) and answer its exit code."""
    run_id, plan = result.run_id, result.plan
    match stop.kind:
        case policy.StopKind.COMPLETE:
            run.emit(loop_lines.complete_line(run_id, steps, run.started_at))
        case policy.StopKind.STUCK:
            node, path = plan.node, str(plan.selection.path)
            run.emit(loop_lines.stuck_line(run_id, node.id, path, node.attempts, node.max_attempts))
        case policy.StopKind.LIMIT:
            maximum = config.max_iterations
            # After the last iteration's runner error the plan is that iteration's, not the next.
            next_iter = load_run_state(run.paths).next_iter
            run.emit(loop_lines.limit_line(run_id, next_iter, maximum, steps, run.started_at))
        case policy.StopKind.MAX_STEPS:
            run.emit(loop_lines.max_steps_line(run_id, steps, run.started_at))
        case policy.StopKind.RUNNER_ERROR:
            # Every way a loop ends prints its `loop: status=` line; the error's own line
            # follows on stderr.
            run.emit(loop_lines.runner_error_line(run_id, steps, run.started_at, step.error))
            raise UserFacingError(f"runner error: {step.error}")
        case policy.StopKind.BUDGET:
            raise ValueError("a budget stops the loop before a step, never after one")
        case _:
            assert_never(stop.kind)
    return stop.exit_code


def hand_to_decomposer(run: LoopRun, node_id: str) -> None:
    """`on_stuck = "decompose"`: the leaf's next iteration is the decomposer's, committed and
    told as the operator's `node decompose` is (the loop already holds the lock)."""
    apply_holding_lock(
        run.paths,
        run.repo,
        NodeOperation.DECOMPOSE,
        node_id,
        lambda tree, _max_attempts: decompose_later(tree, node_id),
    )
