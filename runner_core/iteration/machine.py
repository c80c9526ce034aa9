"""One iteration as a sans-I/O machine: facts and results in, effects out.

Fed the facts a step gathered and the result of each effect it asked for, it answers with the
next effect, moving only along `stages.TRANSITIONS`. `_STEPS` below says which step module
decides what each stage's result leads to (`agent_steps`, `guard_steps`, `end_steps`); together
they decide every runner-error/agent-error split, the deadline and the execution number. It
never performs an effect, reads a clock or touches a file: the shell's ports do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from runner_core.iteration.agent_steps import (
    after_agent,
    after_baseline,
    after_context,
    after_journal,
    after_planner_output,
    after_prepare,
    after_prompt,
    after_tree,
)
from runner_core.iteration.effects import ANSWERS, Abort, IoFailed, PrepareIterationDir, Result
from runner_core.iteration.facts import ClockReading, IterationFacts
from runner_core.iteration.guard_stage import GuardRuns
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.iteration.stages import ExecutorOutput as ExecutorOutput
from runner_core.iteration.stages import IterationMachineError, MachineState, Stage
from runner_core.iteration.steps import (
    after_carry,
    after_commit,
    after_config,
    after_counting,
    after_guard,
    after_guard_log,
    after_head,
    after_listing,
    after_rerun,
    after_restore,
)
from runner_core.iteration.steps import outcome_of as outcome_of
from runner_core.run.identity import first_unused


@attrs.frozen(slots=True)
class IterationMachine(MachineState):
    """An iteration in progress: `effect` is what the shell must do next; `feed` its result."""

    def feed(self, result: Result, now: ClockReading) -> IterationMachine:
        """The machine after `result` answered its effect; `IterationMachineError` when it does
        not answer it (or the iteration has ended)."""
        answers = ANSWERS.get(type(self.effect), ())
        if not isinstance(result, answers):
            raise IterationMachineError(
                f"{type(result).__name__} does not answer {type(self.effect).__name__} "
                f"(stage {self.stage.value})"
            )
        if isinstance(result, IoFailed) and self.stage in _BEFORE_THE_AGENT:
            return self._to(Stage.DONE, Abort(result.message))
        if isinstance(result, IoFailed) and self.stage in (Stage.RESTORE, Stage.COMMITTING):
            return self._to(Stage.DONE, Abort(result.message))
        return _STEPS[self.stage](self, result, now)


_BEFORE_THE_AGENT = frozenset({Stage.PREPARING, Stage.CONTEXT, Stage.JOURNAL})


def start_iteration(facts: IterationFacts) -> IterationMachine:
    """The machine of a planned iteration; its first effect prepares the directory."""
    journal = Journal(
        run_id=facts.run_id,
        iteration=facts.plan.iteration,
        node_id=facts.node.id,
        role=facts.role,
        phase=JournalPhase.RUNNING,
        started_at=facts.started.utc,
        runner_pid=facts.runner_pid,
        command=facts.command,
    )
    aside = set_aside_name(str(facts.plan.iteration), facts.entries)
    runs = GuardRuns(baseline=facts.baseline)
    return IterationMachine(
        facts, Stage.PREPARING, PrepareIterationDir(aside), journal, guard_runs=runs
    )


def set_aside_name(name: str, entries: frozenset[str]) -> str | None:
    """A left-over directory of an interrupted iteration is kept for inspection, not reused."""
    if name not in entries:
        return None
    return first_unused(entries, lambda n: f"{name}.interrupted-{n}", 1)


_Step = Callable[[IterationMachine, Result, ClockReading], IterationMachine]

# What each stage's result leads to; `stages.TRANSITIONS` says where each may lead.
_STEPS: Mapping[Stage, _Step] = MappingProxyType(
    {
        Stage.PREPARING: after_prepare,
        Stage.CONTEXT: after_context,
        Stage.JOURNAL: after_journal,
        Stage.BASELINE: after_baseline,
        Stage.PROMPT: after_prompt,
        Stage.AGENT: after_agent,
        Stage.PLANNER_OUTPUT: after_planner_output,
        Stage.TREE: after_tree,
        Stage.GUARD: after_guard,
        Stage.RERUN: after_rerun,
        Stage.GUARD_LOG: after_guard_log,
        Stage.HEAD: after_head,
        Stage.IMPORT: after_listing,
        Stage.CARRY: after_carry,
        Stage.CONFIG: after_config,
        Stage.RESTORE: after_restore,
        Stage.COUNTING: after_counting,
        Stage.COMMITTING: after_commit,
    }
)
