"""What an iteration starts from: the facts the shell gathered and its clock's readings.

Decides nothing: it names what the machine may know before it asks for its first effect (the
tree, run state, config, goal, the plan, the prompt's parts, when the iteration began). Never
reads a file or a clock: the shell fills these values in and hands them over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from runner_core.guard.report import TestReport
from runner_core.iteration.attempts import Resumed
from runner_core.iteration.git_drift import GitHead
from runner_core.iteration.plan import RunPlan
from runner_core.run.config import Config
from runner_core.run.state import RunState
from runner_core.tree.model import AgentRole, Node


@attrs.frozen(slots=True)
class ClockReading:
    """One reading of the shell's clocks: monotonic seconds and the UTC time as ISO-8601."""

    monotonic: float
    utc: str


@attrs.frozen(slots=True)
class PromptTemplate:
    """A repository's prompt template (`.runner/prompts/<role>.md.j2`), compiled by the shell.

    `sections`: the prompt sections it names (only those are sent); `fixed_bytes`: the size of
    its own text, rendered with every variable empty, which the budget leaves room for;
    `render`: the compiled template, a pure function of its variables."""

    path: str
    sha256: str
    sections: frozenset[str]
    fixed_bytes: int
    render: Callable[[Mapping[str, object]], str] = attrs.field(eq=False, repr=False)


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
