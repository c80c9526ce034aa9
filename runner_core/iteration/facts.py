"""What an iteration starts from, the stages it moves along, and whose error a failure in it is.

Names what the machine may know before its first effect (the tree, run state, config, goal, the
plan, the prompt's parts, its clock's readings) and decides the prompt's sections from them
(`prompt_text`; `runner_core.prompt` arranges them); decides whether each way an iteration can
fail is a runner error (every attempt kept) or an agent error (`ERROR_KIND`). Decides every
legal transition of the machine: `TRANSITIONS` maps a stage to the stages that may come next,
and `MachineState._to`, the one way a state moves, refuses any other with
`IterationMachineError`; and how much of the shared deadline is left. Never chooses among the
legal ones: the steps (`steps`, and the agent's in `machine`) do, from the result fed back.
Never reads a file or a clock, never detects a failure: the shell fills these values in, the
machine finds failures.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Self, TypeVar

import attrs
from pyrsistent import PMap, pmap

from runner_core.backends.limits import LimitSignal
from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.guard.report import TestReport
from runner_core.history.records import ErrorKind, TokenUsage
from runner_core.iteration.effects import Effect, Finished
from runner_core.iteration.guard_stage import GuardRuns
from runner_core.iteration.plan import Review, RunPlan, context_files, project_goal
from runner_core.iteration.record import Resumed, resumed_note
from runner_core.iteration.recovery import Journal
from runner_core.prompt.pack import (
    PromptTemplate,
    build_prompt_pack,
    nested,
    selected_section,
    templated_prompt,
    tree_outline,
)
from runner_core.run.config import Config
from runner_core.run.outside_change import GitHead
from runner_core.run.questions import open_questions
from runner_core.run.state import RunState
from runner_core.tree.model import AgentRole, GuardOutcome, Node


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
    template: PromptTemplate | None = None  # None: the built-in prompt


@attrs.frozen(slots=True)
class IterationFacts:
    """Everything the shell read before an iteration starts.

    `entries` names what the run directory holds (to set a left-over directory aside);
    `previous_snapshot_sha256` is the SHA-256 of tree.json's bytes when they are the previous
    iteration's tree.after.json's (tree.before.json then links to that snapshot), else None.
    """

    run_id: str
    plan: RunPlan
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
    scratch: bool = False  # the agent worked in a scratch checkout, imported as files
    baseline: TestReport | None = None  # the guard's report at the base commit, when known
    tree_sha256: str | None = None  # of the bytes `tree` was read from: an untouched one is it
    job_base: str | None = None  # a parallel job's start commit, kept when its head moves on
    checkout: str = ""  # the run's checkout, named by the lines about a change made outside
    confined: bool = False  # the agent could not reach the run's repository (the sandbox hid it)
    # The node's previous attempt, whose files (when they carried over) the checkout holds.
    resumed: Resumed | None = None

    @property
    def node(self) -> Node:
        return self.plan.node

    @property
    def role(self) -> AgentRole:
        return self.plan.role


def prompt_text(facts: IterationFacts, tests: str | None = None) -> str:
    """prompt.md of the iteration `facts` describe: its sections filled in, within its budget;
    `tests` says which tests judge the node (a ratchet executor's) or, for a decomposer, the
    suite's ids its children's `test:` patterns match. The goal section is the project's goal
    alone (the selected node has its own), and every section's own headings nest under it."""
    context = context_files(facts.node, facts.goal, facts.state, facts.failure_log)
    history = nested(context.get("history.md"))
    if facts.resumed is not None:  # what the checkout holds comes first
        history = resumed_note(facts.resumed) + ("\n" + history if history else "")
    selection = facts.plan.selection
    sections = {
        "contract": facts.prompt.contract,
        "goal": nested(project_goal(facts.goal)),
        "guidance": nested(facts.prompt.guidance),
        "history": history,
        "failure": nested(context.get("failure.md")),
        "selected": selected_section(facts.node, selection.path),
        "tests": tests,
        "tree": tree_outline(facts.tree, facts.node.id),
        "assumptions": nested(facts.prompt.assumptions),
        # Each open question once; those an answer in the guidance quotes are no longer open.
        "questions": nested(open_questions(facts.prompt.questions, facts.prompt.guidance)),
        "output": facts.prompt.output,
    }
    template = facts.prompt.template
    if template is None:
        return build_prompt_pack(sections, facts.prompt.budget).text
    return templated_prompt(template, sections, facts.prompt.budget, template_facts(facts))


def template_facts(facts: IterationFacts) -> dict[str, object]:
    """The variables a prompt template has beside its sections (docs/eval.md)."""
    node = facts.node
    return {
        "role": facts.role.value,
        "iteration": facts.plan.iteration,
        "path": facts.plan.selection.path,
        "node": {
            "id": node.id,
            "title": node.title,
            "goal": node.goal,
            "acceptance": list(node.acceptance),
            "attempts": node.attempts,
            "max_attempts": node.max_attempts,
        },
        "acceptance": list(node.acceptance),
        "guard_command": " ".join(facts.config.guard_command),
        "budget": facts.prompt.budget,
    }


class Failure(enum.StrEnum):
    """What can go wrong inside an iteration; ERROR_KIND says whose error it is."""

    AGENT_NOT_STARTED = "agent process could not start"
    AGENT_PROCESS = "agent process exited non-zero, was killed or timed out"
    AGENT_OUTPUT = "agent output unparseable or not of its schema"
    GUARD_NOT_STARTED = "guard could not be spawned"
    GUARD_NO_TIME = "the iteration's deadline passed before the guard could run"
    IO = "I/O failure"
    TREE_REJECTED = "tree invalid after the agent, immutability, status or child additions"
    DECOMPOSITION_REJECTED = "decomposer's children rejected"
    OUTSIDE_CHANGE = "the operator's commits moved the run branch during the agent or guard"
    RATE_LIMITED = "agent hit a usage or rate limit"
    INTERRUPTED = "interrupted by a signal"
    IMPORT_REFUSED = "the scratch checkout held what is never imported"
    WAIT_FILE_REJECTED = "the agent's wait file is not a wait"
    OUTPUT_PLANTED = "the agent's output file is a symlink, FIFO or directory"
    MERGE_CONFLICT = "a parallel job's tree or files do not merge onto the run branch"
    MERGE_GUARD = "a parallel job's guard fails once the work merged meanwhile is in"
    SANDBOX_LIMIT = "the agent or its guard reached a limit of [sandbox]"
    SETUP_FAILED = "[sandbox] setup failed on the agent's change to one of its inputs"


# Beside state_update.TRANSITIONS: a runner error keeps every attempt and is never shown to
# the agent; an agent error costs an attempt and reaches the next one through history.md.
ERROR_KIND: PMap[Failure, ErrorKind] = pmap(
    {
        Failure.AGENT_NOT_STARTED: ErrorKind.RUNNER,
        Failure.AGENT_PROCESS: ErrorKind.RUNNER,
        Failure.AGENT_OUTPUT: ErrorKind.RUNNER,
        Failure.GUARD_NOT_STARTED: ErrorKind.RUNNER,
        Failure.GUARD_NO_TIME: ErrorKind.RUNNER,
        Failure.IO: ErrorKind.RUNNER,
        Failure.TREE_REJECTED: ErrorKind.AGENT,
        Failure.DECOMPOSITION_REJECTED: ErrorKind.AGENT,
        # The agent works in a scratch checkout of its own: what moved the run's is not it.
        Failure.OUTSIDE_CHANGE: ErrorKind.RUNNER,
        Failure.RATE_LIMITED: ErrorKind.RUNNER,
        Failure.INTERRUPTED: ErrorKind.RUNNER,
        Failure.IMPORT_REFUSED: ErrorKind.AGENT,
        Failure.WAIT_FILE_REJECTED: ErrorKind.AGENT,
        # The runner never makes one: the agent put it there, which no CLI failure explains.
        Failure.OUTPUT_PLANTED: ErrorKind.AGENT,
        # Another job's work met this one's: no attempt is used, the leaf runs again.
        Failure.MERGE_CONFLICT: ErrorKind.RUNNER,
        Failure.MERGE_GUARD: ErrorKind.RUNNER,
        # A fork bomb, a memory bomb, a full /tmp or a checkout grown past disk_mb: the agent's
        # work did it, also when its guard (running the agent's code) is what reached it.
        Failure.SANDBOX_LIMIT: ErrorKind.AGENT,
        # The agent changed what setup reads (package.json) so that setup no longer succeeds.
        Failure.SETUP_FAILED: ErrorKind.AGENT,
    }
)


# A parallel job whose work met another's: its leaf runs again on the new head. The loop does
# not count it as the runner failing, and the report totals what such reruns cost.
MERGE_RERUNS = frozenset({Failure.MERGE_CONFLICT, Failure.MERGE_GUARD})


def runner_error_text(failure: Failure, message: str) -> str:
    """What a runner error records: `message` on one line (whitespace runs collapsed), or the
    failure's own name when the message is blank."""
    return " ".join(message.split()) or failure.value


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
