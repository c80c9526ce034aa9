"""`runner step` and `runner loop`: one iteration carried out by interpreting the core's machine.

runner_core.iteration decides everything (may the step run, which node, the context, the
deadline, what the agent's work amounts to, runner versus agent error, the files and the
commit); `interpret` below carries out each effect the machine asks for and feeds the result
back. Reading `perform`, one sees every side effect of an iteration; the ports it goes through
are `agent_and_guard` (processes) and `iteration_store` (files, journal, git).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal, assert_never

import attrs

from runner_core.backends.limits import LimitSignal
from runner_core.changes.import_rules import import_limits
from runner_core.guard.ratchet import TestFigures
from runner_core.iteration import events as iteration_events
from runner_core.iteration.effects import (
    Abort,
    Action,
    CarryWork,
    Commit,
    CountExecutions,
    Done,
    Finished,
    IoFailed,
    ListScratch,
    PrepareIterationDir,
    ReadConfig,
    ReadHead,
    ReadTree,
    RestoreConfig,
    Result,
    RunAgent,
    RunGuard,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.events import step_exit_code
from runner_core.iteration.facts import ClockReading, IterationFacts
from runner_core.iteration.guard_stage import failure_context
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.plan import (
    CompletePlan,
    IterationOutcome,
    LimitPlan,
    PlanKind,
    RunPlan,
    StuckPlan,
    needs_failure_log,
    plan_step,
)
from runner_core.iteration.ports import IterationPorts
from runner_core.iteration.preconditions import location_problem, step_precondition_problem
from runner_core.iteration.recovery import Journal, interrupted_problem
from runner_core.run.config import Config
from runner_core.run.outside_change import GitHead
from runner_core.run.role_agents import iteration_config
from runner_core.run.state import RunState
from runner_core.tree.model import Node
from runner_core.views.loop_lines import budget_refusal
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import GitError, Repo
from runner_shell.guard.baselines import keep_baseline, known_baseline
from runner_shell.scratch.sandbox import Sandbox
from runner_shell.scratch.slots import SlotError, prepare_slot, step_sandbox
from runner_shell.step import protected_files
from runner_shell.step.agent_and_guard import ProcessAgentRunner as ProcessAgentRunner
from runner_shell.step.agent_and_guard import ProcessGuardRunner as ProcessGuardRunner
from runner_shell.step.attempt_start import attempt_start, told_record
from runner_shell.step.budgets import reached_budget
from runner_shell.step.event_sink import Emitter, EventSink, IterationEvents
from runner_shell.step.iteration_store import CheckoutReader, DiskRecords, GitCommitter
from runner_shell.step.iteration_store import SlotLister as SlotLister
from runner_shell.step.lock_and_journal import current_command, job_journals, read_journal
from runner_shell.step.output_events import LiveOutput
from runner_shell.step.prompt_parts import prompt_parts
from runner_shell.step.repository_checks import (
    check_programs,
    check_tree_writable,
    location_facts,
)
from runner_shell.store.files import read_text_head, sha256_of_regular
from runner_shell.store.iteration_log import utc_now
from runner_shell.store.layout import Places, RunnerPaths
from runner_shell.store.places import IterationPlaces, StepPlaces, iteration_places
from runner_shell.store.state_files import (
    load_config,
    load_run_state,
    load_tree_and_sha256,
    read_bytes,
    read_goal,
    run_files_and_goal,
)

# How much of the previous guard.log is handed to the next attempt as failure.md.
FAILURE_LOG_MAX_BYTES = 1024 * 1024


@attrs.frozen(slots=True)
class StepRan:
    """An iteration ran and was committed: `outcome` is what it came to."""

    run_id: str
    plan: RunPlan
    outcome: IterationOutcome
    limit: LimitSignal | None = None  # the usage or rate limit the agent hit
    tests: TestFigures | None = None  # the guard's test figures, when it wrote a report
    notice: str | None = None  # the line telling the operator the change they made was kept
    kind: ClassVar[Literal[PlanKind.RUN]] = PlanKind.RUN

    @property
    def exit_code(self) -> int:
        return step_exit_code(self.kind, self.outcome)


@attrs.frozen(slots=True)
class StepNotRun:
    """No agent ran: the tree is complete, its leaf stuck, or the iteration limit reached."""

    run_id: str
    plan: CompletePlan | StuckPlan | LimitPlan
    outcome: ClassVar[None] = None
    limit: ClassVar[None] = None

    @property
    def kind(self) -> Literal[PlanKind.COMPLETE, PlanKind.STUCK, PlanKind.LIMIT]:
        return self.plan.kind

    @property
    def exit_code(self) -> int:
        return step_exit_code(self.kind, None)


# What a step came to, told by `kind` as its plan's.
StepResult = StepRan | StepNotRun


@attrs.frozen(slots=True)
class Loaded:
    """What a step reads before it decides anything."""

    config: Config
    state: RunState
    tree: Node
    run_id: str
    head: GitHead  # the branch and commit before the iteration
    tree_sha256: str | None = None  # of the bytes `tree` was parsed from
    goal: str | None = None  # GOAL.md's text, when it was read with the rest


def load_for_step(paths: Places, repo: Repo, resumed: frozenset[int] = frozenset()) -> Loaded:
    """Check the preconditions of a step and load config, run state and tree; the journals of
    the jobs `resumed` (a killed loop's remote jobs, waited for again) do not stop it."""
    journal = read_journal(repo)
    if journal is not None:
        raise UserFacingError(interrupted_problem(journal))
    jobs = tuple((number, path) for number, path in job_journals(repo) if number not in resumed)
    if jobs:
        numbers = ", ".join(str(number) for number, _ in jobs)
        raise UserFacingError(
            f"parallel jobs were interrupted (iterations {numbers}); "
            "run 'runner recover' to record them as interrupted"
        )
    operation = repo.operation_in_progress()
    if operation is not None:
        raise UserFacingError(f"git is in the middle of {operation}; finish or abort it first")
    head = repo.head_if_any()
    # Before the first commit only symbolic-ref knows the branch; preconditions come first.
    branch = head.branch if head is not None else repo.current_branch()
    facts = location_facts(repo, repo.dirty_paths(), branch)
    problem = location_problem(facts)
    if problem is not None:
        raise UserFacingError(problem)
    config = load_config(paths)
    state = load_run_state(paths)
    facts, goal = run_files_and_goal(paths, facts, state.run_id)
    problem = step_precondition_problem(facts)
    if problem is not None:
        raise UserFacingError(problem)
    assert state.run_id is not None
    if head is None:
        raise GitError("the repository has no commits yet; make a first commit")
    tree, tree_sha256 = load_tree_and_sha256(paths)
    return Loaded(config, state, tree, state.run_id, head, tree_sha256, goal)


def run_step(
    paths: RunnerPaths,
    repo: Repo,
    prompt_budget: int,
    loaded: Loaded | None = None,
    backend: str | None = None,
) -> StepResult:
    """One step; `loaded` is what load_for_step read, when the caller has already read it.
    The iteration runs its role's agent (`[agent.<role>]`, else `[agent]`); `backend` (a name
    of that role's fallback) runs instead of its backend, with its own program."""
    places = StepPlaces.of(paths)  # each path derived here, once, and handed along
    loaded = load_for_step(places, repo) if loaded is None else loaded
    plan = plan_step(loaded.tree, loaded.state, loaded.config.max_iterations)
    if plan.kind is not PlanKind.RUN:
        return StepNotRun(loaded.run_id, plan)
    loaded = attrs.evolve(loaded, config=iteration_config(loaded.config, plan.role, backend))
    dirs = iteration_places(places, loaded.run_id, plan.iteration)
    # Problems a user can fix are refused here, before an iteration exists: nothing is written.
    check_programs(loaded.config, places.root)
    sandbox = step_sandbox(places, repo, loaded.config)
    told = told_record(dirs.previous_dir)
    start, resumed = attempt_start(repo, loaded.run_id, plan.node.id, told, loaded.head.sha)
    confined = sandbox.status.bwrap is not None
    facts = attrs.evolve(
        gather(places, loaded, plan, prompt_budget, confined=confined, dirs=dirs),
        head=loaded.head,
        scratch=True,
        baseline=known_baseline(repo, loaded.head.sha),
        checkout=str(places.root),
        confined=confined,
        resumed=resumed,
    )
    if facts.previous_snapshot_sha256 is None:  # else its bytes are canonical and were read back
        check_tree_writable(places, loaded.tree)
    events = IterationEvents(EventSink(dirs.events_log, loaded.config, places.root))
    events.check()
    slot = scratch_checkout(repo, start, loaded.config, sandbox, start != loaded.head.sha)
    ports = shell_ports(places, repo, facts, events, slot, sandbox, start=start, dirs=dirs)
    finished = interpret(start_iteration(facts), ports, events)
    if finished.tests is not None:  # the guard's report on the files just committed
        keep_baseline(repo, repo.head_sha(), finished.tests)
    events.raise_refusal()
    tests = finished.record.tests
    return StepRan(loaded.run_id, plan, finished.outcome, finished.limit, tests, finished.notice)


def scratch_checkout(
    repo: Repo, start: str, config: Config, sandbox: Sandbox | None = None, attempt: bool = False
) -> Path:
    """The agent's checkout of the commit it starts from (the iteration's base, or its
    previous `attempt`'s files on it): the run's own repository is never its."""
    try:
        setup, inputs = config.sandbox.setup, config.sandbox.setup_inputs
        return prepare_slot(repo, start, setup, sandbox=sandbox, inputs=inputs, attempt=attempt)
    except (SlotError, GitError, OSError) as error:
        raise UserFacingError(
            f"the agent's scratch checkout could not be prepared: {error}"
        ) from None


# ---------------------------------------------------------------- facts


def gather(
    paths: Places,
    loaded: Loaded,
    plan: RunPlan,
    budget: int,
    told: int | None = None,
    confined: bool = False,
    dirs: IterationPlaces | None = None,
) -> IterationFacts:
    """Everything the machine needs to know before the iteration starts. `told`: the iteration
    whose outcome `loaded.state` tells the agent of (a parallel job's node's last), else the
    previous one; `confined`: whether its agent runs in the sandbox (the prompt then names
    the paths it sees); `dirs`: the iteration's directories, when the caller derived them."""
    state, run_id = loaded.state, loaded.run_id
    dirs = iteration_places(paths, run_id, plan.iteration) if dirs is None else dirs
    failure_log = None
    previous, iter_dir = dirs.previous_dir, dirs.iter_dir
    failed = previous if told is None else dirs.run_dir / str(told)
    if needs_failure_log(state) and (failed / "guard.log").exists():
        failure_log = failure_context(read_text_head(failed / "guard.log", FAILURE_LOG_MAX_BYTES))
    entries = _left_over(iter_dir)
    snapshot_sha256 = sha256_of_regular(previous / "tree.after.json")
    is_previous = snapshot_sha256 is not None and loaded.tree_sha256 == snapshot_sha256
    return IterationFacts(
        run_id=run_id,
        plan=plan,
        config=loaded.config,
        state=state,
        tree=loaded.tree,
        tree_sha256=loaded.tree_sha256,
        goal=read_goal(paths) if loaded.goal is None else loaded.goal,
        failure_log=failure_log,
        config_bytes=read_bytes(paths.config),
        entries=entries,
        previous_snapshot_sha256=snapshot_sha256 if is_previous else None,
        prompt=prompt_parts(paths, loaded.config, plan.role, iter_dir, budget, confined),
        started=SystemClock().now(),
        runner_pid=os.getpid(),
        command=current_command(),
    )


def _left_over(iter_dir: Path) -> frozenset[str]:
    """The iteration's directory and its set-aside copies, when an interrupted run left one;
    the run directory is listed only then, so a step's cost never grows with the run."""
    if not os.path.lexists(iter_dir):  # a dangling symlink planted there is set aside too
        return frozenset()
    name = iter_dir.name
    return frozenset(
        entry
        for entry in os.listdir(iter_dir.parent)
        if entry == name or entry.startswith(f"{name}.interrupted-")
    )


# ---------------------------------------------------------------- the interpreter


def interpret(
    machine: IterationMachine, ports: IterationPorts, sink: Emitter | None = None
) -> Finished:
    """Carry out the machine's effects, feeding each result back, until it has committed;
    `sink` hears the events the core says each effect and result make."""
    machine = drive(machine, ports, sink)
    effect = machine.effect
    assert isinstance(effect, Finished)
    if sink is not None:
        sink.emit(iteration_events.finished(machine, ports.clock.now().utc), fsync=True)
    return effect


def drive(
    machine: IterationMachine,
    ports: IterationPorts,
    sink: Emitter | None = None,
    until: Callable[[IterationMachine], bool] | None = None,
) -> IterationMachine:
    """Carry out the machine's effects until it has finished, or until `until` says stop
    there (a parallel job stops where only the merge queue may go on)."""
    backend = machine.facts.config.agent_backend
    while not isinstance(effect := machine.effect, Finished):
        if until is not None and until(machine):
            return machine
        if isinstance(effect, Abort):
            raise UserFacingError(effect.message)
        before = ports.clock.now()
        if sink is not None:
            sink.emit(iteration_events.before_effect(machine, before.utc, backend))
        result = perform(effect, machine.journal, ports)
        now = ports.clock.now()
        if sink is not None:
            elapsed = now.monotonic - before.monotonic
            sink.emit(iteration_events.after_result(machine, result, now.utc, elapsed))
        machine = machine.feed(result, now)
    return machine


def refuse_over_budget(paths: RunnerPaths, config: Config, run_id: str) -> None:
    """`runner step` starts no agent once a `[budget]` is reached."""
    use = reached_budget(paths, config, run_id)
    if use is not None:
        raise UserFacingError(budget_refusal(run_id, use))


def perform(action: Action, journal: Journal, ports: IterationPorts) -> Result:
    """Every side effect of an iteration, each through one port. The match is exhaustive: an
    effect the core adds and this does not carry out fails mypy here, and raises at run time."""
    records, reader, committer = ports.records, ports.reader, ports.committer
    try:
        match action:
            case RunAgent():
                return ports.agents.run_agent(action, journal)
            case RunGuard():
                return ports.guards.run_guard(action, journal)
            case ReadTree():
                return reader.read_tree()
            case ReadConfig():
                return reader.read_config()
            case ReadHead():
                return reader.read_head(action)
            case CountExecutions():
                return reader.count_executions()
            case ListScratch():
                if ports.scratch is None:
                    raise RuntimeError("a scratch iteration's ports list its scratch checkout")
                return ports.scratch.list_scratch()
            case PrepareIterationDir():
                records.prepare(action)
            case WriteContext():
                records.write_context(action)
            case WriteJournal():
                records.write_journal(action.journal)
            case WriteIterationFile():
                records.write_iteration_file(action)
            case RestoreConfig():
                committer.restore_config(action.data)
            case CarryWork():
                return committer.carry_work(action)
            case Commit():
                return committer.commit(action)
            case _ as unknown:
                assert_never(unknown)
    except OSError as error:
        return IoFailed(str(error) or type(error).__name__)
    return Done()


class SystemClock:
    def now(self) -> ClockReading:
        return ClockReading(time.monotonic(), utc_now())


@attrs.frozen(slots=True)
class JobPlace:
    """Where a parallel job works: its slot's number and its own journal (docs/parallel.md)."""

    slot_number: int
    journal_file: Path


def shell_ports(
    paths: Places,
    repo: Repo,
    facts: IterationFacts,
    sink: Emitter | None = None,
    slot: Path | None = None,
    sandbox: Sandbox | None = None,
    job: JobPlace | None = None,
    start: str | None = None,
    dirs: IterationPlaces | None = None,
) -> IterationPorts:
    """The ports of an iteration; with a `slot`, the agent and guard work in it and the store
    imports from it, else they work in the run's own checkout. A parallel `job` keeps its
    journal apart until its merge. `start`: the commit the slot was reset to, when it is not
    the base (a previous attempt's files on it); `dirs`: the iteration's, derived already."""
    iter_dir = paths.iter_dir(facts.run_id, facts.plan.iteration) if dirs is None else dirs.iter_dir
    output = None if sink is None else LiveOutput(sink, iteration_events.origin(facts, ""))
    work_dir = paths.root if slot is None else slot
    network = facts.config.guard_network
    limits = import_limits(facts.config)
    scratch = (
        None
        if slot is None or facts.head is None
        else SlotLister(repo, slot, facts.head.sha, limits)
    )
    journal_file = None if job is None else job.journal_file
    agents = ProcessAgentRunner(
        paths, repo, facts.config, iter_dir, output, work_dir, sandbox, journal_file
    )
    return IterationPorts(
        clock=SystemClock(),
        agents=agents,
        guards=ProcessGuardRunner(
            work_dir,
            repo,
            iter_dir,
            output,
            network,
            sandbox,
            None if slot is None or facts.head is None else facts.head.sha,
            facts.config.sandbox.setup,
            0 if job is None else job.slot_number,
            journal_file,
            start,
            facts.config.sandbox.setup_inputs,
        ),
        records=DiskRecords(paths, repo, iter_dir, slot, journal_file),
        reader=CheckoutReader(paths, repo, facts.run_id, slot),
        committer=GitCommitter(
            paths,
            repo,
            facts.run_id,
            iter_dir,
            protected_files.snapshot(paths),
            facts.head if slot is not None else None,
        ),
        scratch=scratch,
    )


def step_result_line(prefix: str, result: StepRan) -> str:
    """`runner step`'s `step:` line or `runner loop`'s `loop: step` line for an iteration run."""
    from runner_core.views.follow import step_line

    outcome, plan = result.outcome, result.plan
    status, guard = outcome.shown_status, outcome.guard.value
    node_id = plan.node.id
    return step_line(prefix, result.run_id, plan.iteration, node_id, status, guard, result.tests)
