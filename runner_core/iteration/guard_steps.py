"""The guard's stages of an iteration: the import decided before the guard, judging the
agent's work, rerunning a test that may be flaky, and writing the note the guard log ends with.

Decides what each guard run is asked to do (command, deadline, log and report names), what its
finish means for the iteration (interrupted, timed out, judged), and when to rerun it. What the
reports add up to is `guard_stage`'s; this module never runs a guard or reads a report.
"""

from __future__ import annotations

import attrs

from runner_core.changes.import_rules import ImportDecision
from runner_core.iteration.effects import (
    GuardFinished,
    IoFailed,
    ListScratch,
    NotStarted,
    Result,
    RunGuard,
    ScratchListed,
    WriteIterationFile,
)
from runner_core.iteration.end_steps import (
    after_import,
    end_checks,
    failed,
    not_started,
    take_import,
)
from runner_core.iteration.facts import ClockReading, Failure
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
from runner_core.iteration.plan import Review, guard_outcome
from runner_core.iteration.recovery import INTERRUPTED, PENDING_GUARD_LOG
from runner_core.iteration.stages import M, MachineState, Stage, with_process_group
from runner_core.run.sandbox_config import limit_reached, setup_failed
from runner_core.tree.model import AgentStatus, GuardOutcome


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


def _guard_limit(machine: M, limit: str) -> M:
    """A guard run (first or again) that reached the sandbox's `limit`: the agent's error."""
    message = limit_reached(limit, machine.facts.config.sandbox, "guard")
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
