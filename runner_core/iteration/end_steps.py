"""The end of an iteration: from the agent's part being over to the commit.

Decides the order of the end checks (list the scratch checkout, read HEAD, read config.toml,
count executions), what a refused import, a change of the run's branch made outside the runner
or a changed config.toml does to the iteration, what a runner error ends with, and the record
and write-set of the commit. Never lists, reads, restores or commits anything: the shell's
ports do, and hand back the results.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from runner_core.changes.import_rules import (
    RUNNER_DIR,
    ImportDecision,
    decide_import,
    guarded_import,
    import_limits,
)
from runner_core.history.records import ErrorKind
from runner_core.iteration.effects import (
    Abort,
    Carried,
    CarryWork,
    ConfigRead,
    CountExecutions,
    ExecutionsCounted,
    Finished,
    HeadRead,
    IoFailed,
    ListScratch,
    ReadConfig,
    ReadHead,
    RestoreConfig,
    Result,
    ScratchListed,
)
from runner_core.iteration.facts import (
    ERROR_KIND,
    MERGE_RERUNS,
    ClockReading,
    Failure,
    runner_error_text,
)
from runner_core.iteration.plan import (
    IterationOutcome,
    Review,
    advance_run_state,
    conclude,
    conclude_runner_error,
)
from runner_core.iteration.preconditions import Refused, Where, carried_error, outside_change
from runner_core.iteration.record import (
    IterationEnd,
    Measured,
    execution_record,
    final_write_set,
    judged_pass,
)
from runner_core.iteration.stages import M, MachineState, Stage
from runner_core.run.state import with_execution
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome


def failed(machine: M, failure: Failure, message: str) -> M:
    """A failure of the run itself (ERROR_KIND says which): the previous tree and every
    attempt are kept; go straight to the end."""
    assert ERROR_KIND[failure] is ErrorKind.RUNNER, failure
    error = runner_error_text(failure, message)
    return end_checks(attrs.evolve(machine, runner_error=error, failure=failure, output=None))


def not_started(result: Result, failure: Failure) -> Failure:
    return Failure.IO if isinstance(result, IoFailed) else failure


def end_checks(machine: M) -> M:
    """The agent's part is over: list the scratch checkout the agent worked in, then read HEAD
    when the shell checks it, else config.toml."""
    if machine.facts.scratch and machine.imported is None:
        return machine._to(Stage.IMPORT, ListScratch(), imported=ImportDecision())
    if machine.facts.head is not None:
        return machine._to(Stage.HEAD, ReadHead(machine.facts.head))
    return _check_config(machine)


def after_import(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return failed(attrs.evolve(machine, judging=False), Failure.IO, result.message)
    assert isinstance(result, ScratchListed)
    return end_checks(take_import(machine, result))


def take_import(machine: M, result: ScratchListed) -> M:
    """The import rules' decision on the listing, taken into the iteration: a refused import
    (or a protected path an executor changed) is the agent's error, and no guard judges it."""
    facts = machine.facts
    limits = import_limits(facts.config)
    decision = decide_import(result.listing, limits)
    if facts.role is AgentRole.EXECUTOR:
        decision = guarded_import(decision, facts.config.guard_protected, facts.node.acceptance)
    machine = attrs.evolve(machine, imported=decision, judging=False)
    review = refused_review(decision)
    runner_error = machine.failure is not None and ERROR_KIND[machine.failure] is ErrorKind.RUNNER
    if review is not None and not runner_error:
        machine = attrs.evolve(
            machine,
            review=review,
            failure=Failure.IMPORT_REFUSED,
            guard=GuardOutcome.SKIPPED,
            output=None,
        )
    return machine


def _check_config(machine: M) -> M:
    return machine._to(Stage.CONFIG, ReadConfig())


def after_head(machine: M, result: Result, now: ClockReading) -> M:
    """The run's checkout and branch as found after the agent and guard: a change made
    outside the runner is never the agent's; the operator's commits are kept (the iteration
    recorded on them as interrupted, the agent's work carried onto them), anything else aborts
    with the way back, the journal left for `runner recover`."""
    facts = machine.facts
    before = facts.head
    assert before is not None
    if isinstance(result, IoFailed):
        return machine._to(Stage.DONE, Abort(result.message))
    assert isinstance(result, HeadRead)
    where = Where(facts.plan.iteration, facts.checkout, facts.confined)
    change = outside_change(before, result.seen, where, RUNNER_DIR)
    if change is None:
        return _check_config(machine)
    if isinstance(change, Refused):
        return machine._to(Stage.DONE, Abort(change.line))
    imported = machine.imported or ImportDecision()
    machine = attrs.evolve(
        machine,
        facts=attrs.evolve(facts, head=change.onto),
        failure=Failure.OUTSIDE_CHANGE,
        runner_error=change.error,
        guard=GuardOutcome.SKIPPED,
        output=None,
        notice=change.line,
    )
    if not imported.changes:
        return _check_config(machine)
    return machine._to(Stage.CARRY, CarryWork(before.sha, change.onto.sha, imported.changes))


def after_carry(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return machine._to(Stage.DONE, Abort(result.message))
    assert isinstance(result, Carried) and machine.imported is not None
    error = carried_error(machine.runner_error or "", result.conflicts)
    imported = attrs.evolve(machine.imported, changes=result.changes)
    return _check_config(attrs.evolve(machine, imported=imported, runner_error=error))


def after_config(machine: M, result: Result, now: ClockReading) -> M:
    kept = isinstance(result, ConfigRead) and result.data == machine.facts.config_bytes
    if not kept:
        return machine._to(Stage.RESTORE, RestoreConfig(machine.facts.config_bytes))
    return _count_or_commit(machine, now)


def after_restore(machine: M, result: Result, now: ClockReading) -> M:
    return _count_or_commit(machine, now)


def _count_or_commit(machine: M, now: ClockReading) -> M:
    counts = machine.facts.state.known_executions()
    if counts is None:
        return machine._to(Stage.COUNTING, CountExecutions())
    return _commit(machine, counts, now)


def after_counting(machine: M, result: Result, now: ClockReading) -> M:
    counts = result.counts if isinstance(result, ExecutionsCounted) else None
    if counts is None:
        assert isinstance(result, IoFailed)
        return machine._to(Stage.DONE, Abort(result.message))
    return _commit(machine, counts, now)


def outcome_of(machine: MachineState) -> IterationOutcome:
    facts = machine.facts
    if machine.review is None or (
        machine.failure is not None and ERROR_KIND[machine.failure] is ErrorKind.RUNNER
    ):
        outcome = conclude_runner_error(facts.tree, machine.runner_error or "runner error")
        return attrs.evolve(
            outcome,
            conflict=machine.failure in MERGE_RERUNS,
            operator=machine.failure is Failure.OUTSIDE_CHANGE,
            merge_session=machine.merge_session,
        )
    outcome = conclude(facts.tree, facts.node.id, machine.review, machine.guard)
    return attrs.evolve(outcome, merge_session=machine.merge_session)


def _commit(machine: M, counts: Mapping[str, int], now: ClockReading) -> M:
    facts = machine.facts
    outcome = outcome_of(machine)
    measured = Measured(
        started_at=facts.started.utc,
        ended_at=now.utc,
        duration_ms=max(int((now.monotonic - facts.started.monotonic) * 1000), 0),
        tokens=machine.tokens,
        cost_usd=machine.cost_usd,
    )
    record = execution_record(
        facts.run_id,
        facts.plan.iteration,
        facts.node,
        facts.role,
        outcome,
        counts,
        measured,
        facts.config.agent_backend,
        machine.guard_runs.figures,
        merge_rerun=machine.failure in MERGE_RERUNS,
        merge_session=machine.merge_session,
        job_base=facts.job_base,
        prompt_template=None if facts.prompt.template is None else facts.prompt.template.sha256,
    )
    runs = machine.guard_runs
    effect = final_write_set(
        IterationEnd(
            run_id=facts.run_id,
            iteration=facts.plan.iteration,
            node_id=facts.node.id,
            prev_tree=facts.tree,
            prev_snapshot_sha256=facts.previous_snapshot_sha256,
            state=with_execution(advance_run_state(facts.state, outcome), facts.node.id, counts),
            outcome=outcome,
            record=record,
            journal=machine.journal,
            imported=machine.imported or ImportDecision(),
            tests_json=runs.tests_json(),
            guard_logs=runs.logs,
            attempt_base=facts.job_base or (None if facts.head is None else facts.head.sha),
            line_notes=machine.line_notes,
        )
    )
    if machine.failure is Failure.OUTSIDE_CHANGE:  # built on the operator's commits
        effect = attrs.evolve(effect, onto=facts.head)
    # A report describes the committed files only when they are all the agent and guard left.
    # ... and are on the run branch: the files of an attempt not judged a pass are not.
    tests = runs.report if machine.failure is None and judged_pass(outcome) else None
    finished = Finished(outcome, record, machine.limit, tests, machine.notice)
    return machine._to(Stage.COMMITTING, effect, finished=finished)


def after_commit(machine: M, result: Result, now: ClockReading) -> M:
    assert machine.finished is not None
    return machine._to(Stage.DONE, machine.finished)


def refused_review(decision: ImportDecision) -> Review | None:
    """The review an iteration ends with when the rules refused the import, else None."""
    if decision.agent_error is None:
        return None
    return Review(AgentStatus.RETRY, "", None, decision.agent_error)
