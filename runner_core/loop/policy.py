"""The loop's policy: what `runner loop` does after each step and before the next.

Decides, from a small `LoopState` and what the last step came to, whether the loop goes on,
waits (runner-error backoff, usage and rate limits, capped at `max_wait_secs`), hands a stuck
leaf to the decomposer once, or stops with which exit code; which loop events that emits and
which hooks they fire; and whether a budget stops the loop before the next agent. Never sleeps,
reads the clock or runs a hook: the shell passes `now` and carries out the decision.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

import attrs
from pyrsistent import PSet, pset

from runner_core.history.records import HistorySummary
from runner_core.loop import events
from runner_core.loop.budget import BudgetUse, exhausted_budget, figure_text
from runner_core.loop.events import Event, EventOrigin, EventType
from runner_core.loop.usage_limits import LimitKind, LimitSignal, LimitWait, iso_utc, wait_until
from runner_core.run.config import BudgetConfig, LoopConfig

EXIT_OK, EXIT_ERROR, EXIT_STUCK = 0, 1, 3

# The `loop: status=` word of a loop that took the `--max-steps` it was given.
MAX_STEPS_STATUS = "max-steps"


class StepKind(enum.Enum):
    """What one `runner step` came to, as the loop sees it."""

    AGENT_RAN = "agent_ran"  # an iteration concluded without a runner error
    RUNNER_ERROR = "runner_error"  # an iteration ended in a runner error (attempts unchanged)
    LIMITED = "limited"  # the agent hit a usage or rate limit: a runner error that waits
    STUCK = "stuck"  # selection found a stuck leaf; no iteration ran
    COMPLETE = "complete"  # every node passes; no iteration ran
    ITERATION_LIMIT = "iteration_limit"  # next_iter reached max_iterations; no iteration ran


class LoopAction(enum.Enum):
    CONTINUE = "continue"
    WAIT = "wait"  # sleep `wait.secs`, then continue
    DECOMPOSE = "decompose"  # run the decomposer on `node_id`, then continue
    STOP = "stop"  # exit with `exit_code`


@attrs.frozen(slots=True)
class StepResult:
    """One step's result: `node_id` for iterations and STUCK, `successful` for AGENT_RAN (guards
    passed on done, or an accepted decomposition), `limit` for LIMITED."""

    kind: StepKind
    node_id: str | None = None
    successful: bool = False
    limit: LimitSignal | None = None
    error: str | None = None  # the runner error's message, for RUNNER_ERROR and LIMITED


def _node_set(node_ids: Iterable[str]) -> PSet[str]:
    return pset(node_ids)


@attrs.frozen(slots=True)
class LoopState:
    """What the loop remembers between steps of one `runner loop`.

    `decomposing` is a stuck leaf handed to the decomposer whose decomposition has not concluded;
    `decomposed` the stuck leaves whose decomposition did: they are never decomposed again.
    """

    consecutive_runner_errors: int = 0
    decomposing: str | None = None
    decomposed: PSet[str] = attrs.field(default=pset(), converter=_node_set)


@attrs.frozen(slots=True)
class LoopDecision:
    """What the loop does next. `status` is the `loop: status=` word of a STOP; `events` are the
    loop events to append (in order), `hooks` the hooks they fire."""

    action: LoopAction
    state: LoopState
    events: tuple[EventType, ...] = ()
    exit_code: int | None = None
    status: str | None = None
    wait: LimitWait | None = None
    wait_reason: str | None = None
    node_id: str | None = None
    budget: BudgetUse | None = None

    @property
    def hooks(self) -> tuple[str, ...]:
        return hooks_for(self.events)


# Each hook fires once per event of its type; iteration_finished comes from the iteration.
HOOK_FOR_EVENT: Mapping[EventType, str] = MappingProxyType(
    {
        EventType.ITERATION_FINISHED: "on_iteration",
        EventType.STUCK: "on_stuck",
        EventType.COMPLETE: "on_complete",
        EventType.LIMIT_REACHED: "on_limit",
        EventType.BUDGET_EXHAUSTED: "on_budget",
        EventType.RUNNER_ERROR: "on_error",
        EventType.WAITING: "on_wait",
    }
)

# How long a limit that names no time is waited out (then capped at max_wait_secs): a rate limit
# outlasted the CLI's own retries; a usage limit resets in hours.
LIMIT_DEFAULT_WAIT_SECS: Mapping[LimitKind, int] = MappingProxyType(
    {
        LimitKind.RATE_LIMITED: 300,
        LimitKind.USAGE_LIMITED: 1800,
    }
)

# The steps whose decision is one fixed stop: (status word, exit code, events).
FIXED_STOPS: Mapping[StepKind, tuple[str, int, tuple[EventType, ...]]] = MappingProxyType(
    {
        StepKind.COMPLETE: ("complete", EXIT_OK, (EventType.COMPLETE,)),
        StepKind.ITERATION_LIMIT: ("limit", EXIT_ERROR, ()),
    }
)


def hooks_for(events: tuple[EventType, ...]) -> tuple[str, ...]:
    """The hooks `events` fire, one per event that has a hook, in event order."""
    return tuple(HOOK_FOR_EVENT[event] for event in events if event in HOOK_FOR_EVENT)


def runner_error_backoff(config: LoopConfig, consecutive: int) -> int:
    """The wait after the `consecutive`-th runner error in a row: the schedule's entry, the last
    repeating, capped at max_wait_secs."""
    schedule = config.runner_error_backoff_secs
    return min(schedule[min(consecutive, len(schedule)) - 1], config.max_wait_secs)


def stops_after_runner_errors(max_consecutive: int) -> int:
    """How many runner errors in a row stop the loop, given `max_consecutive_runner_errors`
    (the config's, or an older `runner_error` event's): 0 stops at the first."""
    return max(1, max_consecutive)


def before_step(budget: BudgetConfig, summary: HistorySummary, state: LoopState) -> LoopDecision:
    """Checked before every step: a reached budget stops the loop before another agent starts."""
    reached = exhausted_budget(budget, summary)
    if reached is None:
        return LoopDecision(LoopAction.CONTINUE, state)
    return _stop(state, EventType.BUDGET_EXHAUSTED, EXIT_ERROR, "budget", budget=reached)


def _stop(
    state: LoopState, event: EventType, code: int, status: str, **figures: Any
) -> LoopDecision:
    return LoopDecision(LoopAction.STOP, state, (event,), exit_code=code, status=status, **figures)


def after_step(
    state: LoopState,
    result: StepResult,
    config: LoopConfig,
    now: datetime,
    *,
    steps: int = 0,
    max_steps: int | None = None,
) -> LoopDecision:
    """What the loop does after `result`, at `now` (an aware datetime), having taken `steps`
    steps of the `max_steps` (`--max-steps`) it may take."""
    decision = _after(state, result, config, now)
    if max_steps is None or steps < max_steps:
        return decision
    if decision.action not in (LoopAction.CONTINUE, LoopAction.WAIT):
        return decision
    # No step follows: stop now rather than wait for one (what happened is still told).
    told = tuple(event for event in decision.events if event is not EventType.WAITING)
    return LoopDecision(
        LoopAction.STOP, decision.state, told, exit_code=EXIT_OK, status=MAX_STEPS_STATUS
    )


def _after(state: LoopState, result: StepResult, config: LoopConfig, now: datetime) -> LoopDecision:
    if result.kind in FIXED_STOPS:
        status, code, stop_events = FIXED_STOPS[result.kind]
        return LoopDecision(LoopAction.STOP, state, stop_events, exit_code=code, status=status)
    if result.kind is StepKind.AGENT_RAN:
        return _after_agent_ran(state, result)
    if result.kind is StepKind.RUNNER_ERROR:
        return _after_runner_error(state, config, now)
    if result.kind is StepKind.LIMITED:
        return _after_limit(state, result, config, now)
    return _after_stuck(state, result, config)


def _after_agent_ran(state: LoopState, result: StepResult) -> LoopDecision:
    # Any concluded agent run ends a streak of runner errors.
    fresh = attrs.evolve(state, consecutive_runner_errors=0)
    if state.decomposing is None or result.node_id != state.decomposing:
        return LoopDecision(LoopAction.CONTINUE, fresh)
    if not result.successful:
        failed = attrs.evolve(fresh, decomposing=None)
        return _stop(failed, EventType.STUCK, EXIT_STUCK, "stuck", node_id=result.node_id)
    done = attrs.evolve(fresh, decomposing=None, decomposed=state.decomposed.add(state.decomposing))
    return LoopDecision(LoopAction.CONTINUE, done)


def _after_runner_error(state: LoopState, config: LoopConfig, now: datetime) -> LoopDecision:
    count = state.consecutive_runner_errors + 1
    counted = attrs.evolve(state, consecutive_runner_errors=count)
    if count >= stops_after_runner_errors(config.max_consecutive_runner_errors):
        return _stop(counted, EventType.RUNNER_ERROR, EXIT_ERROR, "runner_error")
    secs = runner_error_backoff(config, count)
    return LoopDecision(
        LoopAction.WAIT,
        counted,
        (EventType.RUNNER_ERROR, EventType.WAITING),
        wait=LimitWait(secs, iso_utc(now + timedelta(seconds=secs)), capped=False),
        wait_reason="runner_error",
    )


def _after_limit(
    state: LoopState, result: StepResult, config: LoopConfig, now: datetime
) -> LoopDecision:
    if result.limit is None:
        raise ValueError("a LIMITED step result carries its LimitSignal")
    default = LIMIT_DEFAULT_WAIT_SECS[result.limit.kind]
    # A wait is not a runner error in a row: the streak neither grows nor resets.
    return LoopDecision(
        LoopAction.WAIT,
        state,
        (EventType.LIMIT_REACHED, EventType.WAITING),
        wait=wait_until(result.limit, now, config.max_wait_secs, default),
        wait_reason=result.limit.kind.value,
    )


def _after_stuck(state: LoopState, result: StepResult, config: LoopConfig) -> LoopDecision:
    node = result.node_id
    if node is None:
        raise ValueError("a STUCK step result names its node")
    retrying = node == state.decomposing
    if config.on_stuck == "decompose" and (retrying or node not in state.decomposed):
        return LoopDecision(
            LoopAction.DECOMPOSE,
            attrs.evolve(state, decomposing=node),
            (EventType.STUCK,),
            node_id=node,
        )
    return _stop(state, EventType.STUCK, EXIT_STUCK, "stuck", node_id=node)


def ends_the_loop(event: Event) -> bool:
    """Whether `runner loop` ended with `event` (what `runner follow` waits for): complete, a
    budget, a stuck leaf it stops at, or the runner error that ended a streak. The iteration
    limit has no event of its own."""
    if event.type in (EventType.COMPLETE, EventType.BUDGET_EXHAUSTED):
        return True
    if event.type is EventType.STUCK:
        return bool(event.figures["action"] == "stop")
    if event.type is EventType.RUNNER_ERROR:
        allowed = stops_after_runner_errors(event.figures["max_consecutive"])
        return bool(event.figures["consecutive"] >= allowed)
    return False


# ---------------------------------------------------------------- the loop's lines


def wait_line(run_id: str, wait: LimitWait, reason: str) -> str:
    """`loop: wait run=<id> reason=<why> until=<ISO-8601> secs=<n>`, printed before a wait."""
    return waiting_line(run_id, reason, wait.until, wait.secs)


def waiting_line(run_id: str, reason: str, until: str, secs: int) -> str:
    """A wait's line, from the loop's decision or from its `waiting` event alike."""
    return f"loop: wait run={run_id} reason={reason} until={until} secs={secs}"


def status_line(status: str, run_id: str | None, *fields: str) -> str:
    """`loop: status=<status> run=<id> <fields>`: how the loop ended, as `runner loop` prints it
    (its last line) and as `runner follow` shows the event that says so."""
    return " ".join((f"loop: status={status} run={run_id}", *fields))


def ran_fields(steps: int, started_at_iter: int) -> str:
    """What this `runner loop` did, closing its last line."""
    return f"steps={steps} started_at_iter={started_at_iter}"


def spent_fields(use: BudgetUse) -> str:
    """A budget's figures, in the loop's lines and `runner status`'s."""
    return f"spent={figure_text(use.spent)} limit={figure_text(use.limit)}"


def budget_fields(use: BudgetUse) -> str:
    return f"budget={use.budget} {spent_fields(use)}"


def budget_line(run_id: str, use: BudgetUse, steps: int, started_at_iter: int) -> str:
    """The loop's last line when a budget stops it."""
    return status_line("budget", run_id, budget_fields(use), ran_fields(steps, started_at_iter))


def complete_line(run_id: str, steps: int, started_at_iter: int) -> str:
    """The loop's last line when every leaf has passed."""
    return status_line("complete", run_id, ran_fields(steps, started_at_iter))


def stuck_line(run_id: str, node_id: str, path: str, attempts: int, max_attempts: int) -> str:
    """The loop's last line when the selected leaf has used all its attempts."""
    return status_line(
        "stuck", run_id, f"id={node_id} path={path}", f"attempts={attempts}/{max_attempts}"
    )


def limit_line(
    run_id: str, next_iter: int, max_iterations: int, steps: int, started_at_iter: int
) -> str:
    """The loop's last line when the next iteration would pass max_iterations."""
    limits = f"next_iter={next_iter} max_iterations={max_iterations}"
    return status_line("limit", run_id, limits, ran_fields(steps, started_at_iter))


def max_steps_line(run_id: str, steps: int, started_at_iter: int) -> str:
    """The loop's last line when it has run the `--max-steps` it was given."""
    return status_line(MAX_STEPS_STATUS, run_id, ran_fields(steps, started_at_iter))


def interrupted_line(run_id: str | None, exit_code: int) -> str:
    """The loop's last line when a signal ended it (exit 128 + the signal's number)."""
    return status_line("interrupted", run_id, f"exit={exit_code}")


def budget_refusal(run_id: str, use: BudgetUse) -> str:
    """Why `runner step` starts no agent once a budget is reached (one line)."""
    return (
        f"budget {use.budget} reached for run {run_id}: spent {figure_text(use.spent)} of "
        f"{figure_text(use.limit)} (raise it in [budget] of .runner/state/config.toml)"
    )


def decision_events(
    decision: LoopDecision,
    origin: EventOrigin,
    config: LoopConfig,
    result: StepResult | None,
    steps: int,
) -> tuple[Event, ...]:
    """The loop events of `decision`, in its order, with their figures; `origin` is the
    step's (its iteration and node), `result` what it came to (None before a step), `steps`
    how many steps this loop took."""
    here = attrs.evolve(origin, node_id=decision.node_id or origin.node_id)
    error = result.error if result is not None else None
    limit = result.limit if result is not None else None
    built: list[Event] = []
    for kind in decision.events:
        if kind is EventType.RUNNER_ERROR:
            count = decision.state.consecutive_runner_errors
            allowed = stops_after_runner_errors(config.max_consecutive_runner_errors)
            built.append(events.runner_error(here, error or "", count, allowed))
        elif kind is EventType.WAITING and decision.wait is not None:
            reason = decision.wait_reason or ""
            built.append(events.waiting(here, reason, decision.wait.until, decision.wait.secs))
        elif kind is EventType.LIMIT_REACHED and limit is not None:
            built.append(
                events.limit_reached(
                    here, limit.kind.value, limit.message, limit.retry_at, limit.retry_after_secs
                )
            )
        elif kind is EventType.STUCK:
            action = "decompose" if decision.action is LoopAction.DECOMPOSE else "stop"
            built.append(events.stuck(here, action))
        elif kind is EventType.BUDGET_EXHAUSTED and decision.budget is not None:
            use = decision.budget
            built.append(events.budget_exhausted(here, use.budget, use.spent, use.limit))
        elif kind is EventType.COMPLETE:
            built.append(events.complete(attrs.evolve(here, node_id=None), steps))
    return tuple(built)
