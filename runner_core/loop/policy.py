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

import attrs
from pyrsistent import PSet, pset

from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.history.records import HistorySummary
from runner_core.loop import events
from runner_core.loop.budget import BudgetUse, exhausted_budget
from runner_core.loop.events import Event, EventOrigin, EventType
from runner_core.loop.usage_limits import LimitWait, wait_until
from runner_core.run.config import BudgetConfig, LoopConfig
from runner_core.run.exit_codes import ExitCode

# The `loop: status=` word of a loop that took the `--max-steps` it was given.
MAX_STEPS_STATUS = "max-steps"


class StepKind(enum.StrEnum):
    """What one `runner step` came to, as the loop sees it."""

    AGENT_RAN = "agent_ran"  # an iteration concluded without a runner error
    RUNNER_ERROR = "runner_error"  # an iteration ended in a runner error (attempts unchanged)
    LIMITED = "limited"  # the agent hit a usage or rate limit: a runner error that waits
    # The operator's commits on the run branch were kept: interrupted, but nothing failed.
    OPERATOR = "operator"
    STUCK = "stuck"  # selection found a stuck leaf; no iteration ran
    COMPLETE = "complete"  # every node passes; no iteration ran
    ITERATION_LIMIT = "iteration_limit"  # next_iter reached max_iterations; no iteration ran


class StopKind(enum.StrEnum):
    """Why the loop stops; `STOPS` gives each its exit code and `loop: status=` word."""

    COMPLETE = "complete"  # every leaf passes
    STUCK = "stuck"  # a stuck leaf the loop does not (or no longer) decompose
    LIMIT = "limit"  # the next iteration would pass max_iterations
    BUDGET = "budget"  # a `[budget]` is reached, before the next agent starts
    RUNNER_ERROR = "runner_error"  # max_consecutive_runner_errors runner errors in a row
    MAX_STEPS = "max_steps"  # the `--max-steps` it was given are taken


@attrs.frozen(slots=True)
class StopRule:
    """How a stop of one kind ends `runner loop`: its exit code and `loop: status=` word."""

    exit_code: ExitCode
    status: str


# The one table of how the loop ends (a signal ends it too, with 128 + the signal's number).
STOPS: Mapping[StopKind, StopRule] = MappingProxyType(
    {
        StopKind.COMPLETE: StopRule(ExitCode.OK, "complete"),
        StopKind.STUCK: StopRule(ExitCode.STUCK, "stuck"),
        StopKind.LIMIT: StopRule(ExitCode.ERROR, "limit"),
        StopKind.BUDGET: StopRule(ExitCode.ERROR, "budget"),
        StopKind.RUNNER_ERROR: StopRule(ExitCode.ERROR, "runner_error"),
        StopKind.MAX_STEPS: StopRule(ExitCode.OK, MAX_STEPS_STATUS),
    }
)


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


# Every decision carries the loop state after it and the loop events it appends, in order;
# `hooks` are the hooks those events fire.


@attrs.frozen(slots=True)
class Continue:
    """Go on to the next step."""

    state: LoopState
    events: tuple[EventType, ...] = ()

    @property
    def hooks(self) -> tuple[str, ...]:
        return hooks_for(self.events)


@attrs.frozen(slots=True)
class Wait:
    """Sleep `wait.secs` (until `wait.until`), then go on; `reason` is the `reason=` word."""

    state: LoopState
    events: tuple[EventType, ...]
    wait: LimitWait
    reason: str

    @property
    def hooks(self) -> tuple[str, ...]:
        return hooks_for(self.events)


@attrs.frozen(slots=True)
class Decompose:
    """Hand the stuck leaf `node_id` to the decomposer, then go on."""

    state: LoopState
    events: tuple[EventType, ...]
    node_id: str

    @property
    def hooks(self) -> tuple[str, ...]:
        return hooks_for(self.events)


@attrs.frozen(slots=True)
class Stop:
    """End the loop; `node_id` is the stuck leaf a STUCK stop names, `budget` the budget a
    BUDGET stop reached."""

    kind: StopKind
    state: LoopState
    events: tuple[EventType, ...] = ()
    node_id: str | None = None
    budget: BudgetUse | None = None

    @property
    def exit_code(self) -> ExitCode:
        return STOPS[self.kind].exit_code

    @property
    def status(self) -> str:
        """The `loop: status=` word of this stop."""
        return STOPS[self.kind].status

    @property
    def hooks(self) -> tuple[str, ...]:
        return hooks_for(self.events)


LoopDecision = Continue | Wait | Decompose | Stop


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
        EventType.QUESTION: "on_question",
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

# The `kind` of the `limit_reached` event the iteration limit ends the loop with, beside the
# usage and rate limits' kinds, so that `on_limit` hears of every limit the loop meets.
ITERATIONS_LIMIT_KIND = "iterations"
ITERATIONS_LIMIT_MESSAGE = (
    "max_iterations reached: no iteration is left (raise max_iterations in "
    ".runner/state/config.toml)"
)

# The steps whose decision is one fixed stop: (its kind, events).
FIXED_STOPS: Mapping[StepKind, tuple[StopKind, tuple[EventType, ...]]] = MappingProxyType(
    {
        StepKind.COMPLETE: (StopKind.COMPLETE, (EventType.COMPLETE,)),
        StepKind.ITERATION_LIMIT: (StopKind.LIMIT, (EventType.LIMIT_REACHED,)),
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


def before_step(budget: BudgetConfig, summary: HistorySummary, state: LoopState) -> Continue | Stop:
    """Checked before every step: a reached budget stops the loop before another agent starts."""
    reached = exhausted_budget(budget, summary)
    if reached is None:
        return Continue(state)
    return Stop(StopKind.BUDGET, state, (EventType.BUDGET_EXHAUSTED,), budget=reached)


def after_step(
    state: LoopState,
    result: StepResult,
    config: LoopConfig,
    now: datetime,
    *,
    steps: int = 0,
    max_steps: int | None = None,
    iterations_left: int | None = None,
) -> LoopDecision:
    """What the loop does after `result`, at `now` (an aware datetime), having taken `steps`
    steps of the `max_steps` (`--max-steps`) it may take."""
    decision = _after(state, result, config, now)
    if iterations_left is not None and iterations_left <= 0:
        decision = _no_iteration_left(decision)
    if max_steps is None or steps < max_steps:
        return decision
    if not isinstance(decision, Continue | Wait | Decompose):
        return decision
    # No step follows: stop now rather than wait for one or hand a stuck leaf to a decomposer
    # that would not run (what happened is still told; the next loop decomposes it).
    told = tuple(event for event in decision.events if event is not EventType.WAITING)
    return Stop(StopKind.MAX_STEPS, decision.state, told)


def _no_iteration_left(decision: LoopDecision) -> LoopDecision:
    """A wait that no iteration would follow is not waited out: the loop stops at the
    iteration limit now, telling what happened (the wait itself excepted) and the limit."""
    if not isinstance(decision, Wait):
        return decision
    told = tuple(event for event in decision.events if event is not EventType.WAITING)
    kind, limit_events = FIXED_STOPS[StepKind.ITERATION_LIMIT]
    return Stop(kind, decision.state, (*told, *limit_events))


def _is_iteration_limit(decision: LoopDecision, index: int) -> bool:
    """Whether the event at `index` is the iteration limit's: the last of a `limit` stop (a
    usage limit met on the last iteration comes before it)."""
    return (
        isinstance(decision, Stop)
        and decision.kind is StopKind.LIMIT
        and index == len(decision.events) - 1
    )


def _after(state: LoopState, result: StepResult, config: LoopConfig, now: datetime) -> LoopDecision:
    if result.kind in FIXED_STOPS:
        kind, stop_events = FIXED_STOPS[result.kind]
        return Stop(kind, state, stop_events)
    if result.kind is StepKind.AGENT_RAN:
        return _after_agent_ran(state, result)
    if result.kind is StepKind.RUNNER_ERROR:
        return _after_runner_error(state, config, now)
    if result.kind is StepKind.OPERATOR:  # no failure to count or wait out: go on
        return Continue(state)
    if result.kind is StepKind.LIMITED:
        return _after_limit(state, result, config, now)
    return _after_stuck(state, result, config)


def _stuck_stop(state: LoopState, node_id: str | None) -> Stop:
    return Stop(StopKind.STUCK, state, (EventType.STUCK,), node_id=node_id)


def _after_agent_ran(state: LoopState, result: StepResult) -> Continue | Stop:
    # Any concluded agent run ends a streak of runner errors.
    fresh = attrs.evolve(state, consecutive_runner_errors=0)
    if state.decomposing is None or result.node_id != state.decomposing:
        return Continue(fresh)
    if not result.successful:
        return _stuck_stop(attrs.evolve(fresh, decomposing=None), result.node_id)
    done = attrs.evolve(fresh, decomposing=None, decomposed=state.decomposed.add(state.decomposing))
    return Continue(done)


def _after_runner_error(state: LoopState, config: LoopConfig, now: datetime) -> Wait | Stop:
    count = state.consecutive_runner_errors + 1
    counted = attrs.evolve(state, consecutive_runner_errors=count)
    if count >= stops_after_runner_errors(config.max_consecutive_runner_errors):
        return Stop(StopKind.RUNNER_ERROR, counted, (EventType.RUNNER_ERROR,))
    secs = runner_error_backoff(config, count)
    return Wait(
        counted,
        (EventType.RUNNER_ERROR, EventType.WAITING),
        LimitWait(secs, iso_utc(now + timedelta(seconds=secs)), capped=False),
        "runner_error",
    )


def _after_limit(state: LoopState, result: StepResult, config: LoopConfig, now: datetime) -> Wait:
    if result.limit is None:
        raise ValueError("a LIMITED step result carries its LimitSignal")
    default = LIMIT_DEFAULT_WAIT_SECS[result.limit.kind]
    # A wait is not a runner error in a row: the streak neither grows nor resets.
    return Wait(
        state,
        (EventType.LIMIT_REACHED, EventType.WAITING),
        wait_until(result.limit, now, config.max_wait_secs, default),
        result.limit.kind.value,
    )


def _after_stuck(state: LoopState, result: StepResult, config: LoopConfig) -> Decompose | Stop:
    node = result.node_id
    if node is None:
        raise ValueError("a STUCK step result names its node")
    retrying = node == state.decomposing
    if config.on_stuck == "decompose" and (retrying or node not in state.decomposed):
        return Decompose(attrs.evolve(state, decomposing=node), (EventType.STUCK,), node)
    return _stuck_stop(state, node)


def ends_the_loop(event: Event) -> bool:
    """Whether `runner loop` ended with `event` (what `runner follow` waits for): complete, a
    budget, a pause (`runner stop`), the iteration limit, a stuck leaf it stops at, or the
    runner error that ended a streak."""
    if event.type in (EventType.COMPLETE, EventType.BUDGET_EXHAUSTED, EventType.PAUSED):
        return True
    if event.type is EventType.LIMIT_REACHED:
        return bool(event.figures["kind"] == ITERATIONS_LIMIT_KIND)
    if event.type is EventType.STUCK:
        return bool(event.figures["action"] == "stop")
    if event.type is EventType.RUNNER_ERROR:
        allowed = stops_after_runner_errors(event.figures["max_consecutive"])
        return bool(event.figures["consecutive"] >= allowed)
    return False


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
    node = decision.node_id if isinstance(decision, Decompose | Stop) else None
    here = attrs.evolve(origin, node_id=node or origin.node_id)
    error = result.error if result is not None else None
    limit = result.limit if result is not None else None
    built: list[Event] = []
    for index, kind in enumerate(decision.events):
        if kind is EventType.LIMIT_REACHED and _is_iteration_limit(decision, index):
            reached = events.limit_reached(
                here, ITERATIONS_LIMIT_KIND, ITERATIONS_LIMIT_MESSAGE, None, None
            )
            built.append(reached)
        elif kind is EventType.RUNNER_ERROR:
            count = decision.state.consecutive_runner_errors
            allowed = stops_after_runner_errors(config.max_consecutive_runner_errors)
            built.append(events.runner_error(here, error or "", count, allowed))
        elif kind is EventType.WAITING and isinstance(decision, Wait):
            wait = decision.wait
            built.append(events.waiting(here, decision.reason, wait.until, wait.secs))
        elif kind is EventType.LIMIT_REACHED and limit is not None:
            built.append(
                events.limit_reached(
                    here, limit.kind.value, limit.message, limit.retry_at, limit.retry_after_secs
                )
            )
        elif kind is EventType.STUCK:
            action = "decompose" if isinstance(decision, Decompose) else "stop"
            built.append(events.stuck(here, action))
        elif kind is EventType.BUDGET_EXHAUSTED and isinstance(decision, Stop):
            use = decision.budget
            if use is not None:
                built.append(events.budget_exhausted(here, use.budget, use.spent, use.limit))
        elif kind is EventType.COMPLETE:
            built.append(events.complete(attrs.evolve(here, node_id=None), steps))
    return tuple(built)
