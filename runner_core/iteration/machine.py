"""One iteration as a sans-I/O machine: facts and results in, effects out.

Fed the facts a step gathered and the result of each effect it asked for, it answers with the
next effect, moving only along `stages.TRANSITIONS`. It decides every runner-error/agent-error
split, the deadline and the execution number; it never performs an effect, reads a clock or
touches a file: the shell's ports do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.guard.report import TestReport
from runner_core.history.records import ErrorKind, TokenUsage
from runner_core.iteration.effects import (
    Abort,
    CountExecutions,
    Effect,
    Finished,
    ListScratch,
    PrepareIterationDir,
    ReadConfig,
    ReadHead,
    ReadTree,
    RestoreConfig,
    RestoreHead,
    RunAgent,
    RunGuard,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.execution_record import Measured, execution_record
from runner_core.iteration.facts import ClockReading, IterationFacts
from runner_core.iteration.failures import ERROR_KIND, Failure
from runner_core.iteration.git_drift import head_moved_problem, rescue_ref
from runner_core.iteration.guard_runs import GuardRuns
from runner_core.iteration.guard_stage import (
    BASELINE_LOG,
    BASELINE_REPORT,
    JUDGE_REPORT,
    RATCHET,
    GuardRun,
    guard_env,
    judge_guard,
    judging_text,
    needs_baseline,
    pending,
    rerun_log,
    rerun_report,
    wants_rerun,
)
from runner_core.iteration.import_rules import ImportDecision, decide_import
from runner_core.iteration.plan import (
    CONTEXT_FILES,
    INTERRUPTED,
    AgentOutputError,
    IterationOutcome,
    Review,
    advance_run_state,
    agent_process_problem,
    conclude,
    conclude_runner_error,
    context_files,
    guard_outcome,
    parse_agent_output,
    review_decomposition,
    review_execution,
)
from runner_core.iteration.prompt_pack import prompt_text
from runner_core.iteration.recovery import PENDING_GUARD_LOG, Journal, JournalPhase, agent_log_name
from runner_core.iteration.results import (
    ANSWERS,
    AgentFinished,
    ConfigRead,
    ExecutionsCounted,
    GuardFinished,
    HeadRead,
    IoFailed,
    NotStarted,
    Result,
    ScratchListed,
    TreeRead,
)
from runner_core.iteration.scratch_stage import guarded_import, refused_review
from runner_core.iteration.stages import IterationMachineError, Stage, check_transition
from runner_core.iteration.write_set import IterationEnd, final_write_set
from runner_core.loop.usage_limits import LimitSignal
from runner_core.run.state import with_execution
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome
from runner_core.views.text import flatten


@attrs.frozen(slots=True)
class ExecutorOutput:
    """The executor's final JSON value, parsed but not yet judged: it is judged together with
    the tree.json the executor left, once that has been read."""

    value: object


@attrs.frozen(slots=True)
class IterationMachine:
    """An iteration in progress: `effect` is what the shell must do next; `feed` its result."""

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
    guard_runs: GuardRuns = attrs.field(factory=GuardRuns)

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

    def _to(self, stage: Stage, effect: Effect, **changes: Any) -> IterationMachine:
        check_transition(self.stage, stage)
        return attrs.evolve(self, stage=stage, effect=effect, **changes)

    def remaining(self, now: ClockReading) -> float:
        """Seconds left of iteration_timeout_secs: agent and guard share one deadline."""
        elapsed = now.monotonic - self.facts.started.monotonic
        return max(self.facts.config.iteration_timeout_secs - elapsed, 0.0)


_BEFORE_THE_AGENT = frozenset({Stage.PREPARING, Stage.CONTEXT, Stage.JOURNAL})


def start_iteration(facts: IterationFacts) -> IterationMachine:
    """The machine of a planned iteration; its first effect prepares the directory."""
    journal = Journal(
        run_id=facts.run_id,
        iteration=facts.plan.iteration,
        node_id=facts.node.id,
        role=facts.role.value,
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
    n = 1
    while f"{name}.interrupted-{n}" in entries:
        n += 1
    return f"{name}.interrupted-{n}"


def _context(machine: IterationMachine) -> dict[str, str]:
    facts = machine.facts
    return context_files(facts.node, facts.goal, facts.state, facts.failure_log)


def _after_prepare(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    files = _context(machine)
    remove = tuple(name for name in CONTEXT_FILES if name not in files)
    return machine._to(Stage.CONTEXT, WriteContext(tuple(files.items()), remove))


def _after_context(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    # Durable before the agent starts: a kill from here on is found by 'runner recover'.
    return machine._to(Stage.JOURNAL, WriteJournal(machine.journal))


def _after_journal(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    facts = machine.facts
    if needs_baseline(facts.config, facts.role, machine.guard_runs.baseline):
        effect = _guard_effect(machine, now, GuardRun.BASELINE, BASELINE_REPORT, BASELINE_LOG)
        return machine._to(
            Stage.BASELINE, effect, guard_runs=machine.guard_runs.logged(BASELINE_LOG)
        )
    return _prompt(machine)


def _prompt(machine: IterationMachine) -> IterationMachine:
    facts = machine.facts
    tests = None
    if facts.config.guard_mode == RATCHET and facts.role is AgentRole.EXECUTOR:
        tests = judging_text(facts.node.acceptance, machine.guard_runs.baseline)
    prompt = WriteIterationFile("prompt.md", prompt_text(facts, tests))
    return machine._to(Stage.PROMPT, prompt)


def _guard_effect(
    machine: IterationMachine, now: ClockReading, purpose: GuardRun, report: str, log: str
) -> RunGuard:
    facts = machine.facts
    env = guard_env(
        facts.run_id,
        facts.plan.iteration,
        facts.node.id,
        facts.plan.selection.path or facts.node.id,
        facts.role,
        facts.node.acceptance,
    )
    config = facts.config
    return RunGuard(
        config.guard_command,
        machine.remaining(now),
        config.guard_output_limit_bytes,
        log if purpose is GuardRun.JUDGE else pending(log),
        env,
        report,
        purpose,
    )


def _after_baseline(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    if isinstance(result, NotStarted | IoFailed):
        return _failed(machine, _not_started(result, Failure.GUARD_NOT_STARTED), result.message)
    assert isinstance(result, GuardFinished)
    machine = attrs.evolve(machine, journal=_with_process_group(machine, result.process_group))
    if result.interrupted is not None:
        return _failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    # A base commit whose guard wrote no readable report passes no test: everything counts
    # as progress, nothing as a regression.
    baseline = result.report or TestReport()
    return _prompt(attrs.evolve(machine, guard_runs=machine.guard_runs.measured(baseline)))


def _after_prompt(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    facts = machine.facts
    env = (
        ("RUNNER_ROLE", facts.role.value),
        ("RUNNER_RUN_ID", facts.run_id),
        ("RUNNER_ITER", str(facts.plan.iteration)),
        ("RUNNER_NODE_ID", facts.node.id),
    )
    effect = RunAgent(
        role=facts.role,
        env=env,
        timeout_secs=machine.remaining(now),
        limit_bytes=facts.config.executor_output_limit_bytes,
        prompt_name="prompt.md",
        output_name="agent_output.json",
        usage_name="usage.json",
        log_name=agent_log_name(facts.role.value),
    )
    return machine._to(Stage.AGENT, effect)


def _with_process_group(machine: IterationMachine, pgid: int | None) -> Journal:
    if pgid is None:
        return machine.journal
    groups = (*machine.journal.process_groups, pgid)
    return attrs.evolve(machine.journal, process_groups=groups)


def _after_agent(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, NotStarted | IoFailed):
        return _failed(machine, _not_started(result, Failure.AGENT_NOT_STARTED), result.message)
    assert isinstance(result, AgentFinished)
    facts = machine.facts
    machine = attrs.evolve(
        machine,
        journal=_with_process_group(machine, result.process_group),
        tokens=result.tokens,
        cost_usd=result.cost_usd,
    )
    if result.interrupted is not None:
        return _failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    if result.limit is not None:
        message = f"{result.limit.kind.value}: {result.limit.message}"
        return _failed(attrs.evolve(machine, limit=result.limit), Failure.RATE_LIMITED, message)
    if result.wait_problem is not None:
        # The agent asked to wait, but not in a way the runner can honour: its error.
        review = Review(AgentStatus.RETRY, "", None, f"wait file: {result.wait_problem}")
        rejected = Failure.WAIT_FILE_REJECTED
        return _end_checks(attrs.evolve(machine, review=review, failure=rejected))
    problem = agent_process_problem(
        # The configured budget, not what was left of it: that is the number a user can set.
        facts.role,
        result.exit_code,
        result.timed_out,
        facts.config.iteration_timeout_secs,
    )
    if problem is not None:
        return _failed(machine, Failure.AGENT_PROCESS, problem)
    try:
        output = parse_agent_output(facts.role, result.output_text, result.output_problem)
        if facts.role is AgentRole.EXECUTOR:
            return machine._to(Stage.TREE, ReadTree(), output=ExecutorOutput(output))
        review = review_decomposition(
            facts.tree, facts.node.id, output, facts.config.max_attempts_default
        )
    except AgentOutputError as error:
        return _failed(machine, Failure.AGENT_OUTPUT, str(error))
    text = json.dumps(output, indent=2, ensure_ascii=False) + "\n"
    failure = Failure.DECOMPOSITION_REJECTED if review.agent_error is not None else None
    effect = WriteIterationFile("planner_output.json", text)
    return machine._to(Stage.PLANNER_OUTPUT, effect, review=review, failure=failure)


def _after_planner_output(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    return _end_checks(machine)


def _after_tree(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    assert isinstance(result, TreeRead)
    facts, output = machine.facts, machine.output
    assert output is not None  # TREE follows only an executor's output
    try:
        review = review_execution(
            facts.tree, facts.node.id, output.value, result.data, result.problem
        )
    except AgentOutputError as error:
        return _failed(machine, Failure.AGENT_OUTPUT, str(error))
    failure = Failure.TREE_REJECTED if review.agent_error is not None else None
    machine = attrs.evolve(machine, review=review, output=None, failure=failure)
    if not review.needs_guard:
        return _end_checks(machine)
    if machine.remaining(now) <= 0:
        # The agent ended in time, so the runner itself lost the guard's share (suspended,
        # starved): the guard never got its time, which is no failed attempt.
        message = "the iteration's deadline passed before the guard could run (was the runner"
        return _failed(machine, Failure.GUARD_NO_TIME, message + " suspended?)")
    effect_ = _guard_effect(machine, now, GuardRun.JUDGE, JUDGE_REPORT, PENDING_GUARD_LOG)
    return machine._to(Stage.GUARD, effect_)


def _after_guard(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, NotStarted | IoFailed):
        return _failed(machine, _not_started(result, Failure.GUARD_NOT_STARTED), result.message)
    effect = machine.effect
    assert isinstance(result, GuardFinished) and isinstance(effect, RunGuard)
    machine = attrs.evolve(
        machine,
        journal=_with_process_group(machine, result.process_group),
        guard=guard_outcome(result.exit_code, result.timed_out),
    )
    if result.interrupted is not None:
        return _failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    if result.timed_out:
        note = f"guard timed out after {effect.timeout_secs:.1f} s\n"
        return machine._to(Stage.GUARD_LOG, WriteIterationFile(PENDING_GUARD_LOG, note, True))
    runs = machine.guard_runs.judged(result.report, result.report_problem, machine.guard)
    return _judged(attrs.evolve(machine, guard_runs=runs), now)


def _judged(machine: IterationMachine, now: ClockReading) -> IterationMachine:
    """Rerun the guard while a regressed test may be flaky, then conclude what it says."""
    facts, runs = machine.facts, machine.guard_runs
    if machine.remaining(now) > 0 and wants_rerun(
        facts.config, runs.baseline, runs.report, runs.reruns, runs.rerun_count
    ):
        number = runs.rerun_count + 1
        effect = _guard_effect(
            machine, now, GuardRun.RERUN, rerun_report(number), rerun_log(number)
        )
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
        return _end_checks(machine)
    note = WriteIterationFile(PENDING_GUARD_LOG, judgement.note, True)
    return machine._to(Stage.GUARD_LOG, note)


def _after_rerun(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, GuardFinished):
        machine = attrs.evolve(machine, journal=_with_process_group(machine, result.process_group))
        if result.interrupted is not None:
            return _failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    # A rerun that could not start or wrote no report shows nothing flaky.
    report = result.report if isinstance(result, GuardFinished) else None
    return _judged(attrs.evolve(machine, guard_runs=machine.guard_runs.rerun(report)), now)


def _after_guard_log(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    return _end_checks(machine)


def _failed(machine: IterationMachine, failure: Failure, message: str) -> IterationMachine:
    """A failure of the run itself (ERROR_KIND says which): the previous tree and every
    attempt are kept; go straight to the end."""
    assert ERROR_KIND[failure] is ErrorKind.RUNNER, failure
    error = flatten(message) or failure.value
    return _end_checks(attrs.evolve(machine, runner_error=error, failure=failure, output=None))


def _not_started(result: Result, failure: Failure) -> Failure:
    return Failure.IO if isinstance(result, IoFailed) else failure


def _end_checks(machine: IterationMachine) -> IterationMachine:
    """The agent's part is over: list the scratch checkout the agent worked in, then read HEAD
    when the shell checks it, else config.toml."""
    if machine.facts.scratch and machine.imported is None:
        return machine._to(Stage.IMPORT, ListScratch(), imported=ImportDecision())
    if machine.facts.head is not None:
        return machine._to(Stage.HEAD, ReadHead())
    return _check_config(machine)


def _after_import(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    assert isinstance(result, ScratchListed)
    facts = machine.facts
    decision = decide_import(result.listing)
    if facts.role is AgentRole.EXECUTOR:
        decision = guarded_import(decision, facts.config.guard_protected, facts.node.acceptance)
    machine = attrs.evolve(machine, imported=decision)
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
    return _end_checks(machine)


def _check_config(machine: IterationMachine) -> IterationMachine:
    return machine._to(Stage.CONFIG, ReadConfig())


def _after_head(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    before = machine.facts.head
    assert before is not None
    if isinstance(result, IoFailed):
        return machine._to(Stage.DONE, Abort(result.message))
    assert isinstance(result, HeadRead)
    problem = head_moved_problem(before, result.head)
    if problem is None or before.branch is None:
        return _check_config(machine)
    facts = machine.facts
    rescue = rescue_ref(facts.run_id, facts.plan.iteration)
    review = Review(AgentStatus.RETRY, "", None, f"{problem}; its commits are kept as {rescue}")
    machine = attrs.evolve(
        machine,
        review=review,
        failure=Failure.HEAD_MOVED,
        runner_error=None,
        guard=GuardOutcome.SKIPPED,
        output=None,
    )
    return machine._to(Stage.HEAD_RESTORE, RestoreHead(before.branch, before.sha, rescue))


def _after_head_restore(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    if isinstance(result, IoFailed):
        return machine._to(Stage.DONE, Abort(result.message))
    return _check_config(machine)


def _after_config(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    kept = isinstance(result, ConfigRead) and result.data == machine.facts.config_bytes
    if not kept:
        return machine._to(Stage.RESTORE, RestoreConfig(machine.facts.config_bytes))
    return _count_or_commit(machine, now)


def _after_restore(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    return _count_or_commit(machine, now)


def _count_or_commit(machine: IterationMachine, now: ClockReading) -> IterationMachine:
    counts = machine.facts.state.known_executions()
    if counts is None:
        return machine._to(Stage.COUNTING, CountExecutions())
    return _commit(machine, counts, now)


def _after_counting(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    counts = result.counts if isinstance(result, ExecutionsCounted) else None
    if counts is None:
        assert isinstance(result, IoFailed)
        return machine._to(Stage.DONE, Abort(result.message))
    return _commit(machine, counts, now)


def outcome_of(machine: IterationMachine) -> IterationOutcome:
    facts = machine.facts
    if machine.review is None or (
        machine.failure is not None and ERROR_KIND[machine.failure] is ErrorKind.RUNNER
    ):
        return conclude_runner_error(facts.tree, machine.runner_error or "runner error")
    return conclude(facts.tree, facts.node.id, machine.review, machine.guard)


def _commit(
    machine: IterationMachine, counts: Mapping[str, int], now: ClockReading
) -> IterationMachine:
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
        )
    )
    # A report describes the committed files only when they are all the agent and guard left.
    tests = runs.report if machine.failure is None else None
    finished = Finished(outcome, record, machine.limit, tests)
    return machine._to(Stage.COMMITTING, effect, finished=finished)


def _after_commit(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    assert machine.finished is not None
    return machine._to(Stage.DONE, machine.finished)


_Step = Callable[[IterationMachine, Result, ClockReading], IterationMachine]

# What each stage's result leads to; `stages.TRANSITIONS` says where each may lead.
_STEPS: Mapping[Stage, _Step] = MappingProxyType(
    {
        Stage.PREPARING: _after_prepare,
        Stage.CONTEXT: _after_context,
        Stage.JOURNAL: _after_journal,
        Stage.BASELINE: _after_baseline,
        Stage.PROMPT: _after_prompt,
        Stage.AGENT: _after_agent,
        Stage.PLANNER_OUTPUT: _after_planner_output,
        Stage.TREE: _after_tree,
        Stage.GUARD: _after_guard,
        Stage.RERUN: _after_rerun,
        Stage.GUARD_LOG: _after_guard_log,
        Stage.HEAD: _after_head,
        Stage.IMPORT: _after_import,
        Stage.HEAD_RESTORE: _after_head_restore,
        Stage.CONFIG: _after_config,
        Stage.RESTORE: _after_restore,
        Stage.COUNTING: _after_counting,
        Stage.COMMITTING: _after_commit,
    }
)
