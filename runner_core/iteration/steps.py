"""The steps of an iteration after the agent: the guard's stages, then the end checks to the commit.

Decides what each guard run is asked (command, deadline, log and report names), what its finish
means (interrupted, timed out, judged) and when a test is rerun; then the order of the end
checks (the scratch checkout's listing, HEAD, config.toml, the execution count), what a refused
import, an outside change of the run's branch or a changed config does, and the commit's record
and write-set. Never runs, lists, reads or commits anything: the shell's ports do.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

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
    Commit,
    CommitFailed,
    CommitPart,
    ConfigRead,
    CountExecutions,
    ExecutionsCounted,
    Finished,
    GuardFinished,
    HeadRead,
    IoFailed,
    ListScratch,
    NotStarted,
    ReadConfig,
    ReadHead,
    RestoreConfig,
    Result,
    RunGuard,
    ScratchListed,
    WriteIterationFile,
)
from runner_core.iteration.facts import (
    ERROR_KIND,
    MERGE_RERUNS,
    ClockReading,
    Failure,
    M,
    MachineState,
    Stage,
    runner_error_text,
    with_process_group,
)
from runner_core.iteration.guard_stage import (
    JUDGE_REPORT,
    GuardRun,
    guard_env,
    judge_guard,
    pending,
    rerun_log,
    rerun_report,
    wants_rerun,
)
from runner_core.iteration.plan import (
    IterationOutcome,
    Review,
    advance_run_state,
    conclude,
    conclude_runner_error,
    guard_outcome,
)
from runner_core.iteration.record import (
    IterationEnd,
    Measured,
    execution_record,
    final_write_set,
    judged_pass,
)
from runner_core.iteration.recovery import INTERRUPTED, PENDING_GUARD_LOG
from runner_core.run.outside_change import Refused, Where, carried_error, outside_change
from runner_core.run.sandbox_config import LimitHit, limit_reached, setup_failed
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
    """Committed: the iteration's record. A commit that failed after the files were written
    aborts with the way back, the journal left for 'runner recover'."""
    if isinstance(result, CommitFailed):
        assert isinstance(machine.effect, Commit)
        iteration = machine.effect.committing.iteration
        return machine._to(Stage.DONE, Abort(unfinished_commit_text(iteration, result)))
    assert machine.finished is not None
    return machine._to(Stage.DONE, machine.finished)


# What the iteration's files say of it when a part of its end did not happen.
_UNFINISHED: Mapping[CommitPart, str] = MappingProxyType(
    {
        CommitPart.COMMIT: "was logged but not committed",
        CommitPart.ARCHIVE: "was committed but its logs were not archived",
    }
)


def unfinished_commit_text(iteration: int, failure: CommitFailed) -> str:
    return (
        f"iteration {iteration} {_UNFINISHED[failure.failed]}: {failure.message} "
        "(fix the problem, then run 'runner recover')"
    )


def refused_review(decision: ImportDecision) -> Review | None:
    """The review an iteration ends with when the rules refused the import, else None."""
    if decision.agent_error is None:
        return None
    return Review(AgentStatus.RETRY, "", None, decision.agent_error)


def guard_effect(
    machine: MachineState, now: ClockReading, purpose: GuardRun, report: str, log: str
) -> RunGuard:
    """A guard run of `purpose`, given what is left of the iteration's deadline."""
    return timed_guard_effect(machine, machine.remaining(now), purpose, report, log)


def timed_guard_effect(
    machine: MachineState, timeout_secs: float, purpose: GuardRun, report: str, log: str
) -> RunGuard:
    """A guard run of `purpose` with `timeout_secs`: what every guard of the node is told."""
    facts = machine.facts
    env = guard_env(
        facts.run_id,
        facts.plan.iteration,
        facts.node.id,
        facts.plan.selection.path,
        facts.role,
        facts.node.acceptance,
    )
    config = facts.config
    return RunGuard(
        config.guard_command,
        timeout_secs,
        config.guard_output_limit_bytes,
        log if purpose is GuardRun.JUDGE else pending(log),
        env,
        report,
        purpose,
    )


def judge_after_listing(machine: M, now: ClockReading) -> M:
    """The executor's work is ready for its guard: list the scratch checkout first (the import
    decided, its blobs taken), so that what the guard writes is never imported; without a
    scratch checkout, judge at once."""
    if machine.facts.scratch and machine.imported is None:
        return machine._to(Stage.IMPORT, ListScratch(), imported=ImportDecision(), judging=True)
    return _guard_now(machine, now)


def after_listing(machine: M, result: Result, now: ClockReading) -> M:
    """The listing's answer: before the guard, a refused import runs no guard at all."""
    if not machine.judging or isinstance(result, IoFailed):
        return after_import(machine, result, now)
    assert isinstance(result, ScratchListed)
    machine = take_import(machine, result)
    if machine.failure is not None:
        return end_checks(machine)
    return _guard_now(machine, now)


def _guard_now(machine: M, now: ClockReading) -> M:
    if machine.remaining(now) <= 0:
        # The agent ended in time, so the runner itself lost the guard's share (suspended,
        # starved): the guard never got its time, which is no failed attempt.
        message = "the iteration's deadline passed before the guard could run (was the runner"
        return failed(machine, Failure.GUARD_NO_TIME, message + " suspended?)")
    effect = guard_effect(machine, now, GuardRun.JUDGE, JUDGE_REPORT, PENDING_GUARD_LOG)
    effect = attrs.evolve(effect, setup_inputs=changed_setup_inputs(machine))
    return machine._to(Stage.GUARD, effect)


def changed_setup_inputs(machine: MachineState) -> tuple[str, ...]:
    """The files of `[sandbox] setup_inputs` the import changes (added, changed or deleted),
    sorted: setup runs again on them before the guard, in a slot that has a setup."""
    sandbox = machine.facts.config.sandbox
    if not machine.facts.scratch or not sandbox.setup or machine.imported is None:
        return ()
    inputs = frozenset(sandbox.setup_inputs)
    return tuple(change.path for change in machine.imported.changes if change.path in inputs)


def after_guard(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, NotStarted | IoFailed):
        return failed(machine, not_started(result, Failure.GUARD_NOT_STARTED), result.message)
    effect = machine.effect
    assert isinstance(result, GuardFinished) and isinstance(effect, RunGuard)
    machine = attrs.evolve(
        machine,
        journal=with_process_group(machine, result.process_group),
        guard=guard_outcome(result.exit_code, result.timed_out),
    )
    if result.interrupted is not None:
        return failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    if result.setup_failed is not None:  # the agent's inputs of setup: no guard judged
        sandbox = machine.facts.config.sandbox
        message = setup_failed(sandbox, effect.setup_inputs, result.setup_failed)
        review = Review(AgentStatus.RETRY, "", None, message)
        failure, guard = Failure.SETUP_FAILED, GuardOutcome.SKIPPED
        return end_checks(attrs.evolve(machine, review=review, failure=failure, guard=guard))
    if result.sandbox_limit is not None:  # the agent's code, run by its guard, reached it
        return _guard_limit(machine, result.sandbox_limit)
    if result.timed_out:
        note = f"guard timed out after {effect.timeout_secs:.1f} s\n"
        return machine._to(Stage.GUARD_LOG, WriteIterationFile(PENDING_GUARD_LOG, note, True))
    runs = machine.guard_runs.judged(result.report, result.report_problem, machine.guard)
    return _judged(attrs.evolve(machine, guard_runs=runs), now)


def _judged(machine: M, now: ClockReading) -> M:
    """Rerun the guard while a regressed test may be flaky, then conclude what it says."""
    facts, runs = machine.facts, machine.guard_runs
    if machine.remaining(now) > 0 and wants_rerun(
        facts.config, runs.baseline, runs.report, runs.reruns, runs.rerun_count
    ):
        number = runs.rerun_count + 1
        effect = guard_effect(machine, now, GuardRun.RERUN, rerun_report(number), rerun_log(number))
        return machine._to(Stage.RERUN, effect, guard_runs=runs.logged(rerun_log(number)))
    judgement = judge_guard(
        facts.config,
        facts.node.acceptance,
        runs.baseline,
        runs.report,
        runs.problem,
        runs.reruns,
        runs.exit_outcome,
    )
    machine = attrs.evolve(
        machine, guard=judgement.outcome, guard_runs=runs.concluded(judgement.figures)
    )
    if judgement.note is None:
        return end_checks(machine)
    note = WriteIterationFile(PENDING_GUARD_LOG, judgement.note, True)
    return machine._to(Stage.GUARD_LOG, note)


def _guard_limit(machine: M, hit: LimitHit) -> M:
    """A guard run (first or again) that reached the sandbox's limit `hit`: the agent's error."""
    message = limit_reached(hit, machine.facts.config.sandbox, "guard")
    review = Review(AgentStatus.RETRY, "", None, message)
    failure, guard = Failure.SANDBOX_LIMIT, GuardOutcome.FAIL
    return end_checks(attrs.evolve(machine, review=review, failure=failure, guard=guard))


def after_rerun(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, GuardFinished):
        machine = attrs.evolve(machine, journal=with_process_group(machine, result.process_group))
        if result.interrupted is not None:
            return failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
        if result.sandbox_limit is not None:  # the agent's code, run again, reached it
            return _guard_limit(machine, result.sandbox_limit)
    # A rerun that could not start or wrote no report shows nothing flaky.
    report = result.report if isinstance(result, GuardFinished) else None
    return _judged(attrs.evolve(machine, guard_runs=machine.guard_runs.rerun(report)), now)


def after_guard_log(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return failed(machine, Failure.IO, result.message)
    return end_checks(machine)
