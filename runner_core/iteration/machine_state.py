"""What an iteration in progress holds: its facts, stage, pending effect and what it has learned.

Decides only how the machine moves (along `stages.TRANSITIONS`, checked on every move) and how
much of the shared deadline is left. What each stage's result leads to is decided by the step
modules (`agent_steps`, `guard_steps`, `end_steps`) and dispatched by `machine`; this module
never decides a step, performs an effect or reads a clock.
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

import attrs

from runner_core.backends.limits import LimitSignal
from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.history.records import TokenUsage
from runner_core.iteration.effects import Effect, Finished
from runner_core.iteration.facts import ClockReading, Failure, IterationFacts
from runner_core.iteration.guard_stage import GuardRuns
from runner_core.iteration.plan import Review
from runner_core.iteration.recovery import Journal
from runner_core.iteration.stages import Stage, check_transition
from runner_core.tree.model import GuardOutcome


@attrs.frozen(slots=True)
class ExecutorOutput:
    """The executor's final JSON value, parsed but not yet judged: it is judged together with
    the tree.json the executor left, once that has been read."""

    value: object


@attrs.frozen(slots=True)
class MachineState:
    """The fields of `machine.IterationMachine` and the one way it moves; the steps take and
    return any such state, so they need not know the machine that dispatches them."""

    facts: IterationFacts
    stage: Stage
    effect: Effect
    journal: Journal
    output: ExecutorOutput | None = None  # until tree.json has been read
    review: Review | None = None
    failure: Failure | None = None
    runner_error: str | None = None
    guard: GuardOutcome = GuardOutcome.SKIPPED
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    finished: Finished | None = None
    limit: LimitSignal | None = None
    imported: ImportDecision | None = None  # what the scratch checkout gave, once listed
    # The scratch checkout is being listed before the guard judges it: the import is decided
    # (and its blobs taken) first, so nothing the guard writes is ever imported.
    judging: bool = False
    # A parallel job not judged a pass, merged onto a head that moved: its notes carried onto
    # that head (its other files stay on its attempt's ref, made from its start).
    line_notes: tuple[Change, ...] | None = None
    guard_runs: GuardRuns = attrs.field(factory=GuardRuns)
    notice: str | None = None  # the one line the operator is told of a change they made
    # How a parallel job's merge session ended, when its files went to one (SessionEnd).
    merge_session: str | None = None

    def _to(self, stage: Stage, effect: Effect, **changes: Any) -> Self:
        check_transition(self.stage, stage)
        return attrs.evolve(self, stage=stage, effect=effect, **changes)

    def remaining(self, now: ClockReading) -> float:
        """Seconds left of iteration_timeout_secs: agent and guard share one deadline."""
        elapsed = now.monotonic - self.facts.started.monotonic
        return max(self.facts.config.iteration_timeout_secs - elapsed, 0.0)


# A step hands back the same kind of state it was given: the machine stays a machine.
M = TypeVar("M", bound=MachineState)


def with_process_group(machine: MachineState, pgid: int | None) -> Journal:
    """The journal with a started process group added, so that recovery can end it."""
    if pgid is None:
        return machine.journal
    groups = (*machine.journal.process_groups, pgid)
    return attrs.evolve(machine.journal, process_groups=groups)
