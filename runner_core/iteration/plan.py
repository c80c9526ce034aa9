"""One iteration as pure decisions: plan before the agent, conclude after it.

`plan_step` decides whether a step may run and what it runs; `review_execution` and
`review_decomposition` judge what the agent produced; `conclude_*` decide the next tree,
the iteration's status/guard and what is carried to the next iteration. The shell runs the
agent and guard between these calls and writes what they return; nothing here does I/O.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, NoReturn

import attrs

from runner_core.iteration.recovery import CONFLICT as CONFLICT
from runner_core.iteration.recovery import RATE_LIMITED as RATE_LIMITED
from runner_core.iteration.recovery import RUNNER_ERROR as RUNNER_ERROR
from runner_core.iteration.recovery import STATUS_WORDS as STATUS_WORDS
from runner_core.iteration.recovery import shown_status as shown_status
from runner_core.run.identity import parse_frontmatter
from runner_core.run.state import RunState
from runner_core.tree.decompose import (
    child_specs_from_output,
    decompose_node,
    decomposition_problems,
)
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome, Node, NodeNext
from runner_core.tree.selection import CompleteTree, OpenLeaf, StuckLeaf, select_leaf
from runner_core.tree.serialization import (
    TREE_MAX_BYTES,
    TreeValidationError,
    canonical_fits,
    loads_json_strictly,
)
from runner_core.tree.state_update import StateUpdateSummary, apply_state_updates
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.loading import parse_tree
from runner_core.validation.schema import decomposer_output_findings, executor_output_findings
from runner_core.validation.status import status_findings


class PlanKind(enum.StrEnum):
    RUN = "run"
    COMPLETE = "complete"
    STUCK = "stuck"
    LIMIT = "limit"


# ---------------------------------------------------------------- before the agent


@attrs.frozen(slots=True)
class RunPlan:
    """The step runs: `role`'s agent on the selected leaf `node`."""

    selection: OpenLeaf
    iteration: int
    node: Node
    role: AgentRole
    kind: ClassVar[Literal[PlanKind.RUN]] = PlanKind.RUN


@attrs.frozen(slots=True)
class CompletePlan:
    """Every leaf has passed: nothing runs, and no node is selected."""

    selection: CompleteTree
    iteration: int
    kind: ClassVar[Literal[PlanKind.COMPLETE]] = PlanKind.COMPLETE
    role: ClassVar[None] = None

    @property
    def node(self) -> NoReturn:
        # A complete tree selects no node: asking for one is a bug, as it always was.
        raise AttributeError("a complete plan selects no node")


@attrs.frozen(slots=True)
class StuckPlan:
    """The selected leaf `node` has used all its attempts: nothing runs until an operator acts."""

    selection: StuckLeaf
    iteration: int
    node: Node
    kind: ClassVar[Literal[PlanKind.STUCK]] = PlanKind.STUCK
    role: ClassVar[None] = None


@attrs.frozen(slots=True)
class LimitPlan:
    """The next iteration would pass `max_iterations`: nothing runs; `node` would have."""

    selection: OpenLeaf
    iteration: int
    node: Node
    kind: ClassVar[Literal[PlanKind.LIMIT]] = PlanKind.LIMIT
    role: ClassVar[None] = None


# What a step does, told by `kind`; only a RunPlan has a role.
StepPlan = RunPlan | CompletePlan | StuckPlan | LimitPlan


def plan_step(tree: Node, state: RunState, max_iterations: int) -> StepPlan:
    """Whether this step runs, and if so which node in which role."""
    selection = select_leaf(tree)
    if isinstance(selection, CompleteTree):
        return CompletePlan(selection, state.next_iter)
    if isinstance(selection, StuckLeaf):
        return StuckPlan(selection, state.next_iter, selection.node)
    if state.next_iter > max_iterations:
        return LimitPlan(selection, state.next_iter, selection.node)
    return RunPlan(selection, state.next_iter, selection.node, role_of(selection.node))


def role_of(node: Node) -> AgentRole:
    """The agent a leaf's iteration runs: its `next` names it."""
    return AgentRole.DECOMPOSER if node.next is NodeNext.DECOMPOSE else AgentRole.EXECUTOR


def needs_failure_log(state: RunState) -> bool:
    """Whether the previous iteration's guard.log must reach the agent as failure.md."""
    return state.last_status is AgentStatus.DONE and state.last_guard is GuardOutcome.FAIL


def context_files(
    node: Node, goal: str, state: RunState, failure_log: str | None
) -> dict[str, str]:
    """Files of `.runner/context/` for this iteration; absent names must not exist.

    goal.md is the selected node's goal and acceptance, then GOAL.md without its frontmatter;
    history.md the last retry's summary; failure.md the last guard.log when the previous
    iteration was done with a failed guard.
    """
    files = {"goal.md": goal_context(node, goal)}
    # A runner error leaves the summary empty: it is never shown to the agent.
    if state.last_status is AgentStatus.RETRY and state.last_summary:
        files["history.md"] = state.last_summary + "\n"
    if needs_failure_log(state) and failure_log is not None:
        files["failure.md"] = failure_log
    return files


CONTEXT_FILES = ("goal.md", "history.md", "failure.md")


def project_goal(goal: str) -> str:
    """GOAL.md without its frontmatter: the project's goal as the user wrote it."""
    return parse_frontmatter(goal).body.lstrip("\n")


def goal_context(node: Node, goal: str) -> str:
    """context/goal.md: the selected node's goal and acceptance, then the project goal."""
    acceptance = "\n".join(f"- {item}" for item in node.acceptance) or "- (none given)"
    project = project_goal(goal)
    return (
        f"# Selected node {node.id}: {node.title}\n\n{node.goal}\n\n"
        f"Acceptance:\n{acceptance}\n\n# Project goal\n\n{project}"
    )


# ---------------------------------------------------------------- after the agent


@attrs.frozen(slots=True)
class AgentOutputError(ValueError):
    """Agent output that is not JSON or not of its schema: a runner error, no attempt used."""

    message: str

    def __str__(self) -> str:
        return self.message


@attrs.frozen(slots=True)
class Review:
    """What the agent's work amounts to before guards run.

    `tree` is the candidate next tree (None after an agent error); `agent_error` the message
    the next attempt will read.
    """

    status: AgentStatus
    summary: str
    tree: Node | None
    agent_error: str | None = None

    @property
    def needs_guard(self) -> bool:
        return self.agent_error is None and self.status is AgentStatus.DONE


def parse_executor_output(obj: Any) -> tuple[AgentStatus, str]:
    errors = messages(executor_output_findings(obj))
    if errors:
        raise AgentOutputError(f"executor output does not match its schema: {'; '.join(errors)}")
    return AgentStatus(obj["status"]), obj["summary"]


def review_execution(
    prev: Node,
    selected_id: str,
    output: Any,
    tree_text: str | bytes,
    tree_unreadable: str | None = None,
    prev_sha256: str | None = None,
) -> Review:
    """Judge an executor's output and the tree.json it left behind.

    Raises `AgentOutputError` for output of the wrong shape (a runner error); every problem
    with the tree becomes an agent error of a `retry`, including `tree_unreadable`: why the
    shell could not read tree.json at all (deleted, too large). `prev_sha256`, the SHA-256 of
    the bytes `prev` was read from: a tree.json the agent left byte for byte as it was is
    `prev` itself, valid already, so it is neither parsed nor compared again.
    """
    status, summary = parse_executor_output(output)
    if tree_unreadable is not None:
        return Review(
            AgentStatus.RETRY, summary, None, f"tree.json after the agent: {tree_unreadable}"
        )
    if prev_sha256 is not None and _sha256(tree_text) == prev_sha256:
        unchanged = messages(status_findings(prev, prev, selected_id, status))
        if unchanged:
            problems = layer_problems((("status invariants failed", unchanged),))
            return Review(AgentStatus.RETRY, summary, None, "; ".join(problems))
        return Review(status, summary, prev)
    try:
        candidate = parse_tree(tree_text)
    except TreeValidationError as error:
        return Review(AgentStatus.RETRY, summary, None, f"tree.json after the agent: {error}")
    if not canonical_fits(candidate):
        return Review(AgentStatus.RETRY, summary, None, f"tree.json after the agent: {_TOO_LARGE}")
    layers = (
        ("child additions failed", messages(child_findings(prev, candidate, None))),
        ("immutability failed", messages(passed_node_findings(prev, candidate))),
        (
            "status invariants failed",
            messages(status_findings(prev, candidate, selected_id, status)),
        ),
    )
    problems = layer_problems(layers)
    if not problems:
        # The tree after the runner's reset (passes, attempts and existing nodes'
        # max_attempts back to the runner's) must still be valid.
        reset, _ = apply_state_updates(prev, candidate, selected_id, status, GuardOutcome.SKIPPED)
        invalid = messages(invariant_findings(reset))
        if invalid:
            problems = [f"tree invariants failed after the runner's reset: {'; '.join(invalid)}"]
    if problems:
        return Review(AgentStatus.RETRY, summary, None, "; ".join(problems))
    return Review(status, summary, candidate)


def _sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def review_decomposition(
    prev: Node, selected_id: str, output: Any, max_attempts_default: int
) -> Review:
    """Judge a decomposer's output; the runner adds the children itself."""
    errors = messages(decomposer_output_findings(output))
    if errors:
        raise AgentOutputError(f"decomposer output does not match its schema: {'; '.join(errors)}")
    specs = child_specs_from_output(output)
    problems = decomposition_problems(specs)
    summary: str = output["summary"]
    if problems:
        return Review(AgentStatus.RETRY, summary, None, "; ".join(problems))
    candidate = decompose_node(prev, selected_id, specs, max_attempts_default)
    if not canonical_fits(candidate):
        return Review(AgentStatus.RETRY, summary, None, f"the decomposed tree: {_TOO_LARGE}")
    layered = layer_problems(
        (
            # The runner names the children `<parent>.<n>`; deep enough, that is too long an id.
            ("tree invariants failed", messages(invariant_findings(candidate))),
            (
                "child additions failed",
                messages(child_findings(prev, candidate, selected_id)),
            ),
            ("immutability failed", messages(passed_node_findings(prev, candidate))),
            (
                "status invariants failed",
                messages(status_findings(prev, candidate, selected_id, AgentStatus.DECOMPOSED)),
            ),
        )
    )
    if layered:
        return Review(AgentStatus.RETRY, summary, None, "; ".join(layered))
    return Review(AgentStatus.DECOMPOSED, summary, candidate)


def layer_problems(layers: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """One problem per validator layer that failed: its name, then its errors."""
    return [f"{name}: {'; '.join(errors)}" for name, errors in layers if errors]


_TOO_LARGE = (
    f"its canonical form would exceed {TREE_MAX_BYTES} bytes, more than the runner can read back"
)


@attrs.frozen(slots=True)
class IterationOutcome:
    """Everything the shell writes at the end of an iteration."""

    tree: Node
    status: AgentStatus
    guard: GuardOutcome
    summary: str
    update: StateUpdateSummary | None
    agent_error: str | None = None
    runner_error: str | None = None
    conflict: bool = False  # a parallel job's work that met another's: a merge's rerun
    operator: bool = False  # the operator's commits moved the run branch meanwhile: kept
    merge_session: str | None = None  # how a parallel job's merge session ended, if one ran

    @property
    def shown_status(self) -> str:
        """The status the loop line and the commit subject show (see `shown_status`)."""
        return shown_status(
            self.status.value,
            self.error_kind,
            self.runner_error,
            self.conflict,
            self.merge_session,
        )

    @property
    def error_kind(self) -> str | None:
        if self.runner_error is not None:
            return "runner"
        if self.agent_error is not None:
            return "agent"
        return None


def conclude(prev: Node, selected_id: str, review: Review, guard: GuardOutcome) -> IterationOutcome:
    """The next tree after a reviewed agent run and its guard outcome."""
    if review.agent_error is not None or review.tree is None:
        message = review.agent_error or "agent error"
        tree, update = apply_state_updates(
            prev, prev, selected_id, AgentStatus.RETRY, GuardOutcome.SKIPPED
        )
        return IterationOutcome(
            tree, AgentStatus.RETRY, GuardOutcome.SKIPPED, message, update, message
        )
    guard = guard if review.needs_guard else GuardOutcome.SKIPPED
    tree, update = apply_state_updates(prev, review.tree, selected_id, review.status, guard)
    return IterationOutcome(tree, review.status, guard, review.summary, update)


def conclude_runner_error(prev: Node, message: str) -> IterationOutcome:
    """A runner error keeps the previous tree and every attempt (state_update.TRANSITIONS)."""
    return IterationOutcome(
        prev, AgentStatus.RETRY, GuardOutcome.SKIPPED, "", None, runner_error=message
    )


def advance_run_state(state: RunState, outcome: IterationOutcome) -> RunState:
    """run_state after an iteration: next_iter + 1 and what the next prompt is told."""
    return attrs.evolve(
        state,
        next_iter=state.next_iter + 1,
        last_status=outcome.status,
        last_summary="" if outcome.runner_error is not None else outcome.summary,
        last_guard=outcome.guard,
    )


def commit_subject(run_id: str, iteration: int, node_id: str, outcome: IterationOutcome) -> str:
    return (
        f"chore(loop): run {run_id} iter {iteration} node {node_id} "
        f"status={outcome.shown_status} guard={outcome.guard.value}"
    )


def agent_process_problem(
    role: AgentRole, exit_code: int | None, timed_out: bool, timeout_secs: float
) -> str | None:
    """Why a finished agent process is a runner error, or None when it ended normally."""
    if timed_out:
        return f"{role.value} agent timed out after {timeout_secs:g} s (iteration_timeout_secs)"
    if exit_code is not None and exit_code < 0:
        return f"{role.value} agent was killed by signal {-exit_code}"
    if exit_code != 0:
        return f"{role.value} agent exited with status {exit_code}"
    return None


def parse_agent_output(role: AgentRole, text: str | None, problem: str | None) -> Any:
    """The agent's final JSON value; `AgentOutputError` when there is none to use."""
    if text is None:
        raise AgentOutputError(f"{role.value} agent output unusable: {problem or 'missing'}")
    try:
        return loads_json_strictly(text)
    except ValueError as error:
        raise AgentOutputError(f"{role.value} agent output is not JSON: {error}") from None


def guard_outcome(exit_code: int | None, timed_out: bool) -> GuardOutcome:
    """The guard contract (README, Designing guards): exit 0 passes; anything else fails,
    a timeout included."""
    return GuardOutcome.PASS if exit_code == 0 and not timed_out else GuardOutcome.FAIL
