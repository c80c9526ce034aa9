"""The iteration's stages, which may follow which, and the state that moves along them.

Decides every legal transition of the machine: `TRANSITIONS` maps a stage to the stages that may
come next, and `MachineState._to`, the one way a state moves, refuses any other with
`IterationMachineError`; and how much of the shared deadline is left. Never chooses among the
legal ones: the steps (`steps`, and the agent's in `machine`) do, from the result fed back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
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
from runner_core.tree.model import GuardOutcome


class Stage(enum.StrEnum):
    """Where an iteration stands: the effect it waits on (DONE: it has finished or aborted)."""

    PREPARING = "preparing"
    CONTEXT = "context"
    JOURNAL = "journal"
    BASELINE = "baseline"
    PROMPT = "prompt"
    AGENT = "agent"
    PLANNER_OUTPUT = "planner-output"
    TREE = "tree"
    GUARD = "guard"
    RERUN = "rerun"
    GUARD_LOG = "guard-log"
    IMPORT = "import"
    HEAD = "head"
    CARRY = "carry"
    CONFIG = "config"
    RESTORE = "restore"
    COUNTING = "counting"
    COMMITTING = "committing"
    DONE = "done"


def _next(*stages: Stage) -> frozenset[Stage]:
    return frozenset(stages)


# The iteration, top to bottom. Before the agent, an I/O failure aborts (DONE: nothing is
# recorded). A ratchet guard may run at the base commit (BASELINE) before the prompt, and again
# (RERUN) after the guard when a test regressed. An executor's scratch checkout is listed
# (IMPORT) before its GUARD: the import is decided before any guard runs, and a refused one
# runs none. From the prompt on, a runner error skips to the end checks: IMPORT when the agent
# worked in a scratch checkout and it was not listed yet, then HEAD when the shell checks it,
# else CONFIG. When the operator's commits moved the run branch meanwhile, the agent's work is
# carried onto them (CARRY); a change the runner does not take aborts (DONE). RESTORE and COMMITTING
# abort on an I/O failure, COMMITTING also on a commit that failed once its files were written;
# COMMITTING's success is DONE with the iteration's record.
TRANSITIONS: Mapping[Stage, frozenset[Stage]] = MappingProxyType(
    {
        Stage.PREPARING: _next(Stage.CONTEXT, Stage.DONE),
        Stage.CONTEXT: _next(Stage.JOURNAL, Stage.DONE),
        Stage.JOURNAL: _next(Stage.BASELINE, Stage.PROMPT, Stage.DONE),
        Stage.BASELINE: _next(Stage.PROMPT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.PROMPT: _next(Stage.AGENT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.AGENT: _next(
            Stage.TREE, Stage.PLANNER_OUTPUT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG
        ),
        Stage.PLANNER_OUTPUT: _next(Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.TREE: _next(Stage.GUARD, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.GUARD: _next(Stage.RERUN, Stage.GUARD_LOG, Stage.HEAD, Stage.CONFIG),
        Stage.RERUN: _next(Stage.RERUN, Stage.GUARD_LOG, Stage.HEAD, Stage.CONFIG),
        Stage.GUARD_LOG: _next(Stage.HEAD, Stage.CONFIG),
        Stage.IMPORT: _next(Stage.GUARD, Stage.HEAD, Stage.CONFIG),
        Stage.HEAD: _next(Stage.CARRY, Stage.CONFIG, Stage.DONE),
        Stage.CARRY: _next(Stage.CONFIG, Stage.DONE),
        Stage.CONFIG: _next(Stage.RESTORE, Stage.COUNTING, Stage.COMMITTING),
        Stage.RESTORE: _next(Stage.COUNTING, Stage.COMMITTING, Stage.DONE),
        Stage.COUNTING: _next(Stage.COMMITTING, Stage.DONE),
        Stage.COMMITTING: _next(Stage.DONE),
        Stage.DONE: _next(),
    }
)


class IterationMachineError(RuntimeError):
    """The machine was driven off its table: a transition `TRANSITIONS` does not allow, a result
    that does not answer the effect asked for, or a result fed after the end. A bug in the
    driver or the core, never a user's error."""


def check_transition(before: Stage, after: Stage) -> None:
    if after not in TRANSITIONS[before]:
        raise IterationMachineError(f"illegal iteration transition {before.value} -> {after.value}")


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
