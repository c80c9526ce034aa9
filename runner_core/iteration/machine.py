"""One iteration as a sans-I/O machine: facts and results in, effects out.

Fed the facts a step gathered and each effect's result, `IterationMachine` answers the next
effect, moving only along `stages.TRANSITIONS`; `_STEPS` says which step decides each stage's
result: the agent's below (up to its answer: what it is told, whose error its finish is), the
guard's and the end's in `steps`. Never performs an effect, reads a clock or touches a file: the
shell's ports (`ports.IterationPorts`, Protocols it and the tests implement) do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from runner_core.guard.report import TestReport
from runner_core.iteration.effects import (
    ANSWERS,
    Abort,
    AgentFinished,
    GuardFinished,
    IoFailed,
    NotStarted,
    PrepareIterationDir,
    ReadTree,
    Result,
    RunAgent,
    TreeRead,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.facts import (
    ClockReading,
    Failure,
    IterationFacts,
    IterationMachineError,
    M,
    MachineState,
    Stage,
    prompt_text,
    with_process_group,
)
from runner_core.iteration.facts import ExecutorOutput as ExecutorOutput
from runner_core.iteration.guard_stage import (
    BASELINE_LOG,
    BASELINE_REPORT,
    GuardRun,
    GuardRuns,
    decomposition_note,
    judging_text,
    needs_baseline,
    test_ids_text,
)
from runner_core.iteration.plan import (
    CONTEXT_FILES,
    AgentOutputError,
    Review,
    agent_process_problem,
    context_files,
    parse_agent_output,
    review_decomposition,
    review_execution,
)
from runner_core.iteration.recovery import INTERRUPTED, Journal, JournalPhase, agent_log_name
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
    end_checks,
    failed,
    guard_effect,
    judge_after_listing,
    not_started,
)
from runner_core.iteration.steps import outcome_of as outcome_of
from runner_core.run.config import RATCHET
from runner_core.run.identity import first_unused
from runner_core.run.sandbox_config import limit_reached
from runner_core.tree.model import AgentRole, AgentStatus, nodes_by_id


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


# The agent's stages, up to its answer; the guard's and the end's are in `steps`.
def _context(machine: MachineState) -> dict[str, str]:
    facts = machine.facts
    return context_files(facts.node, facts.goal, facts.state, facts.failure_log)


def after_prepare(machine: M, result: Result, now: ClockReading) -> M:
    files = _context(machine)
    remove = tuple(name for name in CONTEXT_FILES if name not in files)
    return machine._to(Stage.CONTEXT, WriteContext(tuple(files.items()), remove))


def after_context(machine: M, result: Result, now: ClockReading) -> M:
    # Durable before the agent starts: a kill from here on is found by 'runner recover'.
    return machine._to(Stage.JOURNAL, WriteJournal(machine.journal))


def after_journal(machine: M, result: Result, now: ClockReading) -> M:
    facts = machine.facts
    if needs_baseline(facts.config, facts.role, machine.guard_runs.baseline):
        effect = guard_effect(machine, now, GuardRun.BASELINE, BASELINE_REPORT, BASELINE_LOG)
        return machine._to(
            Stage.BASELINE, effect, guard_runs=machine.guard_runs.logged(BASELINE_LOG)
        )
    return _prompt(machine)


def _prompt(machine: M) -> M:
    facts = machine.facts
    tests = None
    if facts.config.guard_mode == RATCHET and facts.role is AgentRole.EXECUTOR:
        tests = judging_text(facts.node.acceptance, machine.guard_runs.baseline)
    if facts.role is AgentRole.DECOMPOSER:
        # The tests that will judge its children: the suite's ids their patterns match.
        tests = test_ids_text(machine.guard_runs.baseline)
    prompt = WriteIterationFile("prompt.md", prompt_text(facts, tests))
    return machine._to(Stage.PROMPT, prompt)


def after_baseline(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, NotStarted | IoFailed):
        return failed(machine, not_started(result, Failure.GUARD_NOT_STARTED), result.message)
    assert isinstance(result, GuardFinished)
    machine = attrs.evolve(machine, journal=with_process_group(machine, result.process_group))
    if result.interrupted is not None:
        return failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    if result.sandbox_limit is not None:  # never judged on a baseline cut short: the runner's
        message = limit_reached(result.sandbox_limit, machine.facts.config.sandbox, "baseline")
        return failed(machine, Failure.GUARD_NOT_STARTED, message)
    # A base commit whose guard wrote no readable report passes no test: everything counts
    # as progress, nothing as a regression.
    baseline = result.report or TestReport()
    return _prompt(attrs.evolve(machine, guard_runs=machine.guard_runs.measured(baseline)))


def after_prompt(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return failed(machine, Failure.IO, result.message)
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


def after_agent(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, NotStarted | IoFailed):
        return failed(machine, not_started(result, Failure.AGENT_NOT_STARTED), result.message)
    assert isinstance(result, AgentFinished)
    facts = machine.facts
    machine = attrs.evolve(
        machine,
        journal=with_process_group(machine, result.process_group),
        tokens=result.tokens,
        cost_usd=result.cost_usd,
    )
    if result.interrupted is not None:
        return failed(machine, Failure.INTERRUPTED, f"{INTERRUPTED} by {result.interrupted}")
    if result.sandbox_limit is not None:  # what the agent did ended its session
        message = limit_reached(result.sandbox_limit, facts.config.sandbox)
        review = Review(AgentStatus.RETRY, "", None, message)
        return end_checks(attrs.evolve(machine, review=review, failure=Failure.SANDBOX_LIMIT))
    if result.limit is not None:
        message = f"{result.limit.kind.value}: {result.limit.message}"
        return failed(attrs.evolve(machine, limit=result.limit), Failure.RATE_LIMITED, message)
    if result.wait_problem is not None:
        # The agent asked to wait, but not in a way the runner can honour: its error.
        review = Review(AgentStatus.RETRY, "", None, f"wait file: {result.wait_problem}")
        rejected = Failure.WAIT_FILE_REJECTED
        return end_checks(attrs.evolve(machine, review=review, failure=rejected))
    problem = agent_process_problem(
        # The configured budget, not what was left of it: that is the number a user can set.
        facts.role,
        result.exit_code,
        result.timed_out,
        facts.config.iteration_timeout_secs,
    )
    if problem is not None:
        return failed(machine, Failure.AGENT_PROCESS, problem)
    if result.output_text is None and result.output_planted:
        review = Review(AgentStatus.RETRY, "", None, f"output: {result.output_problem}")
        return end_checks(attrs.evolve(machine, review=review, failure=Failure.OUTPUT_PLANTED))
    try:
        output = parse_agent_output(facts.role, result.output_text, result.output_problem)
        if facts.role is AgentRole.EXECUTOR:
            return machine._to(Stage.TREE, ReadTree(), output=ExecutorOutput(output))
        review = review_decomposition(
            facts.tree, facts.node.id, output, facts.config.max_attempts_default
        )
    except AgentOutputError as error:
        return failed(machine, Failure.AGENT_OUTPUT, str(error))
    review = _with_test_note(machine, review)
    text = json.dumps(output, indent=2, ensure_ascii=False) + "\n"
    failure = Failure.DECOMPOSITION_REJECTED if review.agent_error is not None else None
    effect = WriteIterationFile("planner_output.json", text)
    return machine._to(Stage.PLANNER_OUTPUT, effect, review=review, failure=failure)


def _with_test_note(machine: MachineState, review: Review) -> Review:
    """A ratchet's decomposition summary names its children's patterns no test matches yet and
    the children judged by regressions alone."""
    facts = machine.facts
    if facts.config.guard_mode != RATCHET or review.tree is None:
        return review
    parent = nodes_by_id(review.tree).get(facts.node.id)
    if parent is None:
        return review
    children = [(child.id, child.acceptance) for child in parent.children]
    note = decomposition_note(children, machine.guard_runs.baseline)
    if note is None:
        return review
    return attrs.evolve(review, summary=f"{review.summary.rstrip()} [{note}]")


def after_planner_output(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return failed(machine, Failure.IO, result.message)
    return end_checks(machine)


def after_tree(machine: M, result: Result, now: ClockReading) -> M:
    if isinstance(result, IoFailed):
        return failed(machine, Failure.IO, result.message)
    assert isinstance(result, TreeRead)
    facts, output = machine.facts, machine.output
    assert output is not None  # TREE follows only an executor's output
    try:
        review = review_execution(
            facts.tree, facts.node.id, output.value, result.data, result.problem, facts.tree_sha256
        )
    except AgentOutputError as error:
        return failed(machine, Failure.AGENT_OUTPUT, str(error))
    failure = Failure.TREE_REJECTED if review.agent_error is not None else None
    machine = attrs.evolve(machine, review=review, output=None, failure=failure)
    if not review.needs_guard:
        return end_checks(machine)
    return judge_after_listing(machine, now)


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
