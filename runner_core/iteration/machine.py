"""One iteration as a sans-I/O machine: facts and results in, effects out.

Fed the facts a step gathered (tree, run state, config, goal, the clock's readings as values)
and the result of each effect it asked for, it answers with the next effect as data: prepare
the iteration directory, write context files and the journal, run the agent, read tree.json,
run the guard, restore config.toml, and finally one ordered write-set and commit. It decides
every runner-error/agent-error split, the deadline and the execution number; it never performs
an effect, reads a clock or touches a file: the shell's ports (declared here) do.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

import attrs
from pyrsistent import PMap, pmap

from runner_core.history.records import ErrorKind, ExecutionRecord, TokenUsage, record_to_meta
from runner_core.iteration.git_drift import GitHead, head_moved_problem, rescue_ref
from runner_core.iteration.plan import (
    CONTEXT_FILES,
    AgentOutputError,
    IterationOutcome,
    Review,
    StepPlan,
    advance_run_state,
    agent_process_problem,
    commit_subject,
    conclude,
    conclude_runner_error,
    context_files,
    guard_outcome,
    parse_agent_output,
    review_decomposition,
    review_execution,
)
from runner_core.iteration.prompt_pack import build_prompt_pack, selected_section, tree_outline
from runner_core.iteration.recovery import (
    PENDING_GUARD_LOG,
    Journal,
    JournalPhase,
    agent_log_name,
    interrupted_message,
)
from runner_core.loop.usage_limits import LimitSignal
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.config import Config
from runner_core.run.state import RunState, run_state_to_json, with_execution
from runner_core.run.trailers import iteration_commit_message
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome, Node, nodes_by_id
from runner_core.tree.serialization import dumps_tree
from runner_core.views.text import flatten

# Written under a temporary name: the iteration log puts guard.log after meta and output.
GUARD_TIMED_OUT_BEFORE_START = "=== stdout ===\n=== stderr ===\nguard timed out\n"


class Failure(enum.Enum):
    """What can go wrong inside an iteration; ERROR_KIND says whose error it is."""

    AGENT_NOT_STARTED = "agent process could not start"
    AGENT_PROCESS = "agent process exited non-zero, was killed or timed out"
    AGENT_OUTPUT = "agent output unparseable or not of its schema"
    GUARD_NOT_STARTED = "guard could not be spawned"
    IO = "I/O failure"
    TREE_REJECTED = "tree invalid after the agent, immutability, status or child additions"
    DECOMPOSITION_REJECTED = "decomposer's children rejected"
    HEAD_MOVED = "HEAD or the run branch moved during the agent or guard"
    RATE_LIMITED = "agent hit a usage or rate limit"
    INTERRUPTED = "interrupted by a signal"


# Beside state_update.TRANSITIONS: a runner error keeps every attempt and is never shown to
# the agent; an agent error costs an attempt and reaches the next one through history.md.
ERROR_KIND: PMap[Failure, ErrorKind] = pmap(
    {
        Failure.AGENT_NOT_STARTED: ErrorKind.RUNNER,
        Failure.AGENT_PROCESS: ErrorKind.RUNNER,
        Failure.AGENT_OUTPUT: ErrorKind.RUNNER,
        Failure.GUARD_NOT_STARTED: ErrorKind.RUNNER,
        Failure.IO: ErrorKind.RUNNER,
        Failure.TREE_REJECTED: ErrorKind.AGENT,
        Failure.DECOMPOSITION_REJECTED: ErrorKind.AGENT,
        Failure.HEAD_MOVED: ErrorKind.AGENT,
        Failure.RATE_LIMITED: ErrorKind.RUNNER,
        Failure.INTERRUPTED: ErrorKind.RUNNER,
    }
)


# ---------------------------------------------------------------- facts


@attrs.frozen(slots=True)
class ClockReading:
    """One reading of the shell's clocks: monotonic seconds and the UTC time as ISO-8601."""

    monotonic: float
    utc: str


@attrs.frozen(slots=True)
class PromptParts:
    """What the prompt needs besides the tree: the role's templates, already filled in by the
    shell with its paths, and the notes files (None when absent): the operator's guidance
    (`runner tell`), the agent's assumptions and open questions."""

    contract: str
    output: str
    guidance: str | None
    assumptions: str | None
    questions: str | None
    budget: int


@attrs.frozen(slots=True)
class IterationFacts:
    """Everything the shell read before an iteration starts.

    `entries` names what the run directory holds (to set a left-over directory aside);
    `previous_snapshot_sha256` is the SHA-256 of tree.json's bytes when they are the previous
    iteration's tree.after.json's (tree.before.json then links to that snapshot), else None.
    """

    run_id: str
    plan: StepPlan
    config: Config
    state: RunState
    tree: Node
    goal: str
    failure_log: str | None
    config_bytes: bytes
    entries: frozenset[str]
    previous_snapshot_sha256: str | None
    prompt: PromptParts
    started: ClockReading
    runner_pid: int
    command: str
    head: GitHead | None = None  # the branch and commit before the agent; None: not checked

    @property
    def node(self) -> Node:
        return self.plan.node

    @property
    def role(self) -> AgentRole:
        return self.plan.role or AgentRole.EXECUTOR


# ---------------------------------------------------------------- effects


@attrs.frozen(slots=True)
class ReadHead:
    """Say which branch is checked out and which commit HEAD is, after the agent and guard."""


@attrs.frozen(slots=True)
class RestoreHead:
    """The agent moved HEAD or the branch: keep what HEAD is now under `rescue_ref`, then put
    `branch` back at `sha`, checked out, with the work tree's tracked files as they were."""

    branch: str
    sha: str
    rescue_ref: str


@attrs.frozen(slots=True)
class PrepareIterationDir:
    """Create the iteration directory, first renaming a left-over one to `set_aside_as`."""

    set_aside_as: str | None


@attrs.frozen(slots=True)
class WriteContext:
    """Write these `.runner/context/` files and remove the others of CONTEXT_FILES."""

    files: tuple[tuple[str, str], ...]
    remove: tuple[str, ...]


@attrs.frozen(slots=True)
class WriteJournal:
    journal: Journal


@attrs.frozen(slots=True)
class WriteIterationFile:
    """Write (or append to) a file of the iteration directory."""

    name: str
    text: str
    append: bool = False


@attrs.frozen(slots=True)
class RunAgent:
    """Run the role's agent on `prompt_name` until `timeout_secs`; `env` joins RUNNER_* paths."""

    role: AgentRole
    env: tuple[tuple[str, str], ...]
    timeout_secs: float
    limit_bytes: int
    prompt_name: str
    output_name: str
    usage_name: str
    log_name: str


@attrs.frozen(slots=True)
class ReadTree:
    """Read tree.json as the agent left it."""


@attrs.frozen(slots=True)
class RunGuard:
    argv: tuple[str, ...]
    timeout_secs: float
    limit_bytes: int
    log_name: str


@attrs.frozen(slots=True)
class ReadConfig:
    """Read config.toml's bytes, to see whether the agent changed it."""


@attrs.frozen(slots=True)
class RestoreConfig:
    """config.toml belongs to the user and the runner, never to the agent: put it back."""

    data: bytes


@attrs.frozen(slots=True)
class CountExecutions:
    """Count each node's recorded iterations of the run (only for a run state without counts)."""


class Place(enum.Enum):
    STATE = "state"  # .runner/state/
    ITERATION = "iteration"  # .runner/iterations/<run>/<iter>/
    RUN = "run"  # .runner/iterations/<run>/


@attrs.frozen(slots=True)
class FileWrite:
    """One file of the final write-set, written atomically.

    `link_from` (a name under Place.RUN) asks for a hard link to that snapshot instead, made
    only while its bytes have the SHA-256 `link_sha256` (an agent may have rewritten or replaced
    it); otherwise `data` is written, or the canonical text of `fallback_tree`. `read_only` files
    are snapshots (mode 0444); `rename_from` moves a file of the iteration directory into place
    if it exists.
    """

    place: Place
    name: str
    data: bytes | str = b""  # text is written as UTF-8
    read_only: bool = False
    link_from: str | None = None
    rename_from: str | None = None
    fallback_tree: Node | None = None
    link_sha256: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.link_from is None) != (self.link_sha256 is None):
            raise ValueError("a link names its source and the SHA-256 its bytes must have")


@attrs.frozen(slots=True)
class Commit:
    """The iteration's end: journal `writing`, the files in order, journal `committing`, the
    commit, then the journal cleared."""

    writing: Journal
    files: tuple[FileWrite, ...]
    committing: Journal
    message: str


@attrs.frozen(slots=True)
class Finished:
    """The iteration is committed; nothing more to do."""

    outcome: IterationOutcome
    record: ExecutionRecord
    limit: LimitSignal | None = None  # the usage or rate limit the agent hit


@attrs.frozen(slots=True)
class Abort:
    """An I/O failure before the iteration exists: nothing recorded, the error propagates."""

    message: str


Effect = (
    PrepareIterationDir
    | WriteContext
    | WriteJournal
    | WriteIterationFile
    | RunAgent
    | ReadTree
    | RunGuard
    | ReadConfig
    | RestoreConfig
    | ReadHead
    | RestoreHead
    | CountExecutions
    | Commit
    | Finished
    | Abort
)


# ---------------------------------------------------------------- results


@attrs.frozen(slots=True)
class Done:
    """The effect was carried out and has nothing to report."""


@attrs.frozen(slots=True)
class AgentFinished:
    exit_code: int | None
    timed_out: bool
    output_text: str | None
    output_problem: str | None
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    process_group: int | None = None
    limit: LimitSignal | None = None  # the usage or rate limit the backend recognised
    interrupted: str | None = None  # the signal that stopped the agent, when one did


@attrs.frozen(slots=True)
class GuardFinished:
    exit_code: int | None
    timed_out: bool
    process_group: int | None = None
    interrupted: str | None = None  # the signal that stopped the guard, when one did


@attrs.frozen(slots=True)
class TreeRead:
    """tree.json's bytes, or why it could not be read (deleted, too large)."""

    data: bytes
    problem: str | None = None


@attrs.frozen(slots=True)
class ConfigRead:
    data: bytes | None  # None: deleted or replaced by something unreadable


@attrs.frozen(slots=True)
class ExecutionsCounted:
    counts: Mapping[str, int]


@attrs.frozen(slots=True)
class HeadRead:
    """The checked-out branch and HEAD's commit, as git says them now."""

    head: GitHead


@attrs.frozen(slots=True)
class NotStarted:
    """The process could not be started; `message` is one line naming the program."""

    message: str


@attrs.frozen(slots=True)
class IoFailed:
    message: str


Result = (
    Done
    | AgentFinished
    | GuardFinished
    | TreeRead
    | ConfigRead
    | HeadRead
    | ExecutionsCounted
    | NotStarted
    | IoFailed
)


# ---------------------------------------------------------------- what the shell provides


class Clock(Protocol):
    def now(self) -> ClockReading: ...


class AgentRunner(Protocol):
    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted: ...


class GuardRunner(Protocol):
    def run_guard(self, effect: RunGuard, journal: Journal) -> GuardFinished | NotStarted: ...


class IterationStore(Protocol):
    """The files of `.runner/` and the repository's commit."""

    def prepare(self, effect: PrepareIterationDir) -> None: ...
    def write_context(self, effect: WriteContext) -> None: ...
    def write_journal(self, journal: Journal) -> None: ...
    def write_iteration_file(self, effect: WriteIterationFile) -> None: ...
    def read_tree(self) -> TreeRead: ...
    def read_config(self) -> ConfigRead: ...
    def restore_config(self, data: bytes) -> None: ...
    def read_head(self) -> HeadRead: ...
    def restore_head(self, effect: RestoreHead) -> None: ...
    def count_executions(self) -> Mapping[str, int]: ...
    def commit(self, effect: Commit) -> None: ...


@attrs.frozen(slots=True)
class IterationPorts:
    """The shell's side of an iteration: its clock, processes and files."""

    clock: Clock
    agents: AgentRunner
    guards: GuardRunner
    store: IterationStore


# ---------------------------------------------------------------- the machine


class Stage(enum.Enum):
    PREPARING = "preparing"
    CONTEXT = "context"
    JOURNAL = "journal"
    PROMPT = "prompt"
    AGENT = "agent"
    PLANNER_OUTPUT = "planner-output"
    TREE = "tree"
    GUARD = "guard"
    GUARD_LOG = "guard-log"
    HEAD = "head"
    HEAD_RESTORE = "head-restore"
    CONFIG = "config"
    RESTORE = "restore"
    COUNTING = "counting"
    COMMITTING = "committing"
    DONE = "done"


@attrs.frozen(slots=True)
class IterationMachine:
    """An iteration in progress: `effect` is what the shell must do next; `feed` its result."""

    facts: IterationFacts
    stage: Stage
    effect: Effect
    journal: Journal
    output: Any = None  # the executor's output, until tree.json has been read
    review: Review | None = None
    failure: Failure | None = None
    runner_error: str | None = None
    guard: GuardOutcome = GuardOutcome.SKIPPED
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    finished: Finished | None = None
    limit: LimitSignal | None = None

    def feed(self, result: Result, now: ClockReading) -> IterationMachine:
        if isinstance(result, IoFailed) and self.stage in _BEFORE_THE_AGENT:
            return self._to(Stage.DONE, Abort(result.message))
        if isinstance(result, IoFailed) and self.stage in (Stage.RESTORE, Stage.COMMITTING):
            return self._to(Stage.DONE, Abort(result.message))
        return _STEPS[self.stage](self, result, now)

    def _to(self, stage: Stage, effect: Effect, **changes: Any) -> IterationMachine:
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
    return IterationMachine(facts, Stage.PREPARING, PrepareIterationDir(aside), journal)


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
    prompt = WriteIterationFile("prompt.md", prompt_text(machine.facts))
    return machine._to(Stage.PROMPT, prompt)


def prompt_text(facts: IterationFacts) -> str:
    context = context_files(facts.node, facts.goal, facts.state, facts.failure_log)
    selection = facts.plan.selection
    sections = {
        "contract": facts.prompt.contract,
        "goal": context["goal.md"],
        "guidance": facts.prompt.guidance,
        "history": context.get("history.md"),
        "failure": context.get("failure.md"),
        "selected": selected_section(facts.node, selection.path or facts.node.id),
        "tree": tree_outline(facts.tree, facts.node.id),
        "assumptions": facts.prompt.assumptions,
        "questions": facts.prompt.questions,
        "output": facts.prompt.output,
    }
    return build_prompt_pack(sections, facts.prompt.budget).text


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
        return _failed(machine, Failure.INTERRUPTED, f"interrupted by {result.interrupted}")
    if result.limit is not None:
        message = f"{result.limit.kind.value}: {result.limit.message}"
        return _failed(attrs.evolve(machine, limit=result.limit), Failure.RATE_LIMITED, message)
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
            return machine._to(Stage.TREE, ReadTree(), output=output)
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
    return _check_config(machine)


def _after_tree(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    assert isinstance(result, TreeRead)
    facts = machine.facts
    try:
        review = review_execution(
            facts.tree, facts.node.id, machine.output, result.data, result.problem
        )
    except AgentOutputError as error:
        return _failed(machine, Failure.AGENT_OUTPUT, str(error))
    failure = Failure.TREE_REJECTED if review.agent_error is not None else None
    machine = attrs.evolve(machine, review=review, output=None, failure=failure)
    if not review.needs_guard:
        return _check_config(machine)
    remaining = machine.remaining(now)
    if remaining <= 0:
        # A guard with no time left fails without running.
        effect = WriteIterationFile(PENDING_GUARD_LOG, GUARD_TIMED_OUT_BEFORE_START)
        return machine._to(Stage.GUARD_LOG, effect, guard=GuardOutcome.FAIL)
    config = facts.config
    effect_ = RunGuard(
        config.guard_command, remaining, config.guard_output_limit_bytes, PENDING_GUARD_LOG
    )
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
        return _failed(machine, Failure.INTERRUPTED, f"interrupted by {result.interrupted}")
    if result.timed_out:
        note = f"guard timed out after {effect.timeout_secs:.1f} s\n"
        return machine._to(Stage.GUARD_LOG, WriteIterationFile(PENDING_GUARD_LOG, note, True))
    return _check_config(machine)


def _after_guard_log(
    machine: IterationMachine, result: Result, now: ClockReading
) -> IterationMachine:
    if isinstance(result, IoFailed):
        return _failed(machine, Failure.IO, result.message)
    return _check_config(machine)


def _failed(machine: IterationMachine, failure: Failure, message: str) -> IterationMachine:
    """A failure of the run itself (ERROR_KIND says which): the previous tree and every
    attempt are kept; go straight to the end."""
    assert ERROR_KIND[failure] is ErrorKind.RUNNER, failure
    error = flatten(message) or failure.value
    return _check_config(attrs.evolve(machine, runner_error=error, failure=failure, output=None))


def _not_started(result: Result, failure: Failure) -> Failure:
    return Failure.IO if isinstance(result, IoFailed) else failure


def _check_config(machine: IterationMachine) -> IterationMachine:
    if machine.facts.head is not None and machine.stage is not Stage.HEAD_RESTORE:
        return machine._to(Stage.HEAD, ReadHead())
    return machine._to(Stage.CONFIG, ReadConfig())


def _after_head(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    before = machine.facts.head
    assert before is not None
    if isinstance(result, IoFailed):
        return machine._to(Stage.DONE, Abort(result.message))
    assert isinstance(result, HeadRead)
    problem = head_moved_problem(before, result.head)
    if problem is None or before.branch is None:
        return machine._to(Stage.CONFIG, ReadConfig())
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
    )
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
        )
    )
    return machine._to(Stage.COMMITTING, effect, finished=Finished(outcome, record, machine.limit))


def _after_commit(machine: IterationMachine, result: Result, now: ClockReading) -> IterationMachine:
    assert machine.finished is not None
    return machine._to(Stage.DONE, machine.finished)


@attrs.frozen(slots=True)
class Measured:
    """What the shell measured of an iteration, beside the core's outcome."""

    started_at: str
    ended_at: str
    duration_ms: int
    tokens: TokenUsage | None = None
    cost_usd: float | None = None


def execution_record(
    run_id: str,
    iteration: int,
    node: Node,
    role: AgentRole,
    outcome: IterationOutcome,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
) -> ExecutionRecord:
    """meta.json of the iteration; `node` is the selected node as it was before it."""
    return ExecutionRecord(
        run_id=run_id,
        node_id=node.id,
        execution=counts.get(node.id, 0) + 1,
        iteration=iteration,
        role=role,
        started_at=measured.started_at,
        ended_at=measured.ended_at,
        status=outcome.status,
        guard=outcome.guard,
        error_kind=_error_kind(outcome),
        error=outcome.runner_error if outcome.runner_error is not None else outcome.agent_error,
        tokens=measured.tokens,
        cost_usd=measured.cost_usd,
        duration_ms=measured.duration_ms,
        attempts_before=node.attempts,
        attempts_after=attempts_after(outcome.tree, node),
        backend=backend,
    )


def _error_kind(outcome: IterationOutcome) -> ErrorKind | None:
    return None if outcome.error_kind is None else ErrorKind(outcome.error_kind)


def attempts_after(tree: Node, node: Node) -> int:
    found = nodes_by_id(tree).get(node.id)
    return node.attempts if found is None else found.attempts


# ---------------------------------------------------------------- the final write-set


@attrs.frozen(slots=True)
class IterationEnd:
    """What the final write-set is made of, for a step and for `runner recover` alike.

    `prev_snapshot_sha256`: tree.json's bytes were the previous iteration's tree.after.json,
    with this SHA-256, so tree.before.json links to that snapshot (while it still has those
    bytes) instead of being serialised again.
    """

    run_id: str
    iteration: int
    node_id: str
    prev_tree: Node
    prev_snapshot_sha256: str | None
    state: RunState
    outcome: IterationOutcome
    record: ExecutionRecord
    journal: Journal


def final_write_set(end: IterationEnd) -> Commit:
    """The iteration log's files in order (meta, output, guard.log, snapshots), then run_state."""
    outcome = end.outcome
    after = dumps_tree(outcome.tree)  # text: the shell encodes it in slices as it writes
    files = [
        FileWrite(Place.STATE, "tree.json", after),
        FileWrite(Place.ITERATION, "meta.json", _json_bytes(record_to_meta(end.record))),
        FileWrite(
            Place.ITERATION,
            "output.json",
            _json_bytes({"status": outcome.status.value, "summary": outcome.summary}),
        ),
        FileWrite(Place.ITERATION, "guard.log", rename_from=PENDING_GUARD_LOG),
    ]
    if outcome.agent_error is not None:
        text = f"agent error: {outcome.agent_error}\n"
        files.append(FileWrite(Place.ITERATION, "agent_error.log", text.encode("utf-8")))
    if outcome.runner_error is not None:
        text = f"runner error: {outcome.runner_error}\n"
        files.append(FileWrite(Place.ITERATION, "runner_error.log", text.encode("utf-8")))
    files.extend(_snapshots(end, after))
    # The chain links this commit to the last one through run_state: no git history is read.
    link = chain_link(end.state.chain or chain_seed(end.run_id), end.record, after.encode("utf-8"))
    state = _json_bytes(run_state_to_json(attrs.evolve(end.state, chain=link)))
    files.append(FileWrite(Place.STATE, "run_state.json", state))
    subject = commit_subject(end.run_id, end.iteration, end.node_id, outcome)
    return Commit(
        writing=attrs.evolve(end.journal, phase=JournalPhase.WRITING),
        files=tuple(files),
        committing=attrs.evolve(end.journal, phase=JournalPhase.COMMITTING, commit_subject=subject),
        message=iteration_commit_message(subject, end.record, link),
    )


def _snapshots(end: IterationEnd, after: str) -> tuple[FileWrite, ...]:
    """tree.before.json and tree.after.json, read-only, sharing bytes that already exist.

    Only snapshots are ever linked, never tree.json: an agent editing tree.json in place
    cannot reach a snapshot through a link. A link names the SHA-256 its source must still have.
    """
    unchanged = end.outcome.tree is end.prev_tree
    if end.prev_snapshot_sha256 is not None:
        source = f"{end.iteration - 1}/tree.after.json"
        before = FileWrite(
            Place.ITERATION,
            "tree.before.json",
            read_only=True,
            link_from=source,
            fallback_tree=end.prev_tree,
            link_sha256=end.prev_snapshot_sha256,
        )
    else:
        before_bytes = after if unchanged else dumps_tree(end.prev_tree)
        before = FileWrite(Place.ITERATION, "tree.before.json", before_bytes, True)
    if not unchanged:
        return before, FileWrite(Place.ITERATION, "tree.after.json", after, True)
    # The tree is the one before: tree.after.json shares tree.before.json's bytes.
    sha256 = end.prev_snapshot_sha256 or hashlib.sha256(after.encode("utf-8")).hexdigest()
    link = f"{end.iteration}/tree.before.json"
    after_write = FileWrite(
        Place.ITERATION, "tree.after.json", after, True, link_from=link, link_sha256=sha256
    )
    return before, after_write


def interrupted_end(
    journal: Journal,
    tree: Node,
    state: RunState,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
) -> IterationEnd:
    """How `runner recover` ends an interrupted iteration: a runner error `interrupted`, the
    last commit's tree and every attempt kept."""
    node = nodes_by_id(tree)[journal.node_id]
    outcome = conclude_runner_error(tree, interrupted_message(journal))
    record = execution_record(
        journal.run_id,
        journal.iteration,
        node,
        AgentRole(journal.role),
        outcome,
        counts,
        measured,
        backend,
    )
    return IterationEnd(
        run_id=journal.run_id,
        iteration=journal.iteration,
        node_id=node.id,
        prev_tree=tree,
        prev_snapshot_sha256=None,
        state=with_execution(advance_run_state(state, outcome), node.id, counts),
        outcome=outcome,
        record=record,
        journal=journal,
    )


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


_STEPS = MappingProxyType(
    {
        Stage.PREPARING: _after_prepare,
        Stage.CONTEXT: _after_context,
        Stage.JOURNAL: _after_journal,
        Stage.PROMPT: _after_prompt,
        Stage.AGENT: _after_agent,
        Stage.PLANNER_OUTPUT: _after_planner_output,
        Stage.TREE: _after_tree,
        Stage.GUARD: _after_guard,
        Stage.GUARD_LOG: _after_guard_log,
        Stage.HEAD: _after_head,
        Stage.HEAD_RESTORE: _after_head_restore,
        Stage.CONFIG: _after_config,
        Stage.RESTORE: _after_restore,
        Stage.COUNTING: _after_counting,
        Stage.COMMITTING: _after_commit,
    }
)
