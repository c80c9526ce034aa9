"""What an iteration starts from, the prompt that makes, and whose error a failure in it is.

Names what the machine may know before its first effect (the tree, run state, config, goal, the
plan, the prompt's parts, its clock's readings) and decides the prompt's sections from them
(`prompt_text`; `runner_core.prompt` arranges them); decides whether each way an iteration can
fail is a runner error (every attempt kept) or an agent error (`ERROR_KIND`). Never reads a file
or a clock, never detects a failure: the shell fills these values in, the machine finds failures.
"""

from __future__ import annotations

import enum

import attrs
from pyrsistent import PMap, pmap

from runner_core.guard.report import TestReport
from runner_core.history.records import ErrorKind
from runner_core.iteration.plan import RunPlan, context_files, project_goal
from runner_core.iteration.preconditions import GitHead
from runner_core.iteration.record import Resumed, resumed_note
from runner_core.prompt.pack import (
    PromptTemplate,
    build_prompt_pack,
    nested,
    selected_section,
    templated_prompt,
    tree_outline,
)
from runner_core.run.config import Config
from runner_core.run.questions import open_questions
from runner_core.run.state import RunState
from runner_core.tree.model import AgentRole, Node


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
