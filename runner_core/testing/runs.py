"""Whole runs driven through the pure iteration functions, for history, report and audit tests.

Decides nothing the runner decides: `iterate` is the one adapter onto the core's iteration
(plan_step, review_execution / review_decomposition, conclude / conclude_runner_error,
advance_run_state), and `runs` draws what agents and guards do between its calls. Every tree
of a run is the core's own answer, so a run is valid by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core import (
    AgentOutputError,
    AgentRole,
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    GuardOutcome,
    IterationOutcome,
    Node,
    PlanKind,
    RunState,
    StepPlan,
    TokenUsage,
    advance_run_state,
    conclude,
    conclude_runner_error,
    dumps_tree,
    plan_step,
    review_decomposition,
    review_execution,
    tree_to_json,
)
from runner_core.testing.edits import EditKind, agent_edits
from runner_core.testing.outputs import decomposer_outputs, executor_outputs
from runner_core.testing.trees import passed_ids, preorder, trees


@attrs.frozen(slots=True)
class AgentTurn:
    """What the agent and the guard did in one iteration, as the shell reports it.

    `output` is the agent's final JSON value; `tree_text` the tree.json an executor left
    (ignored for a decomposer); `runner_error` set when the agent process itself failed
    (exit status, timeout), in which case nothing else is read.
    """

    output: Any = None
    tree_text: str = ""
    guard: GuardOutcome = GuardOutcome.PASS
    runner_error: str | None = None


def iterate(
    tree: Node,
    state: RunState,
    turn: Callable[[Node, StepPlan], AgentTurn],
    *,
    max_iterations: int,
    max_attempts_default: int,
) -> tuple[StepPlan, IterationOutcome | None, RunState]:
    """One iteration through the core: its plan, and when it ran, its outcome and the next
    run state (the outcome is None and the state unchanged when the run has ended).
    `turn(tree, plan)` is what the agent and guard did with the planned node."""
    plan = plan_step(tree, state, max_iterations)
    if plan.kind is not PlanKind.RUN:
        return plan, None, state
    agent = turn(tree, plan)
    node_id = plan.node.id
    if agent.runner_error is not None:
        outcome = conclude_runner_error(tree, agent.runner_error)
    else:
        try:
            if plan.role is AgentRole.DECOMPOSER:
                review = review_decomposition(tree, node_id, agent.output, max_attempts_default)
            else:
                review = review_execution(tree, node_id, agent.output, agent.tree_text)
        except AgentOutputError as error:
            outcome = conclude_runner_error(tree, str(error))
        else:
            outcome = conclude(tree, node_id, review, agent.guard)
    return plan, outcome, advance_run_state(state, outcome)


@attrs.frozen(slots=True)
class RunStep:
    """One iteration of a run: the tree after it, its record (what meta.json holds), the
    core's outcome and run_state after it."""

    tree: Node
    record: ExecutionRecord
    outcome: IterationOutcome
    state: RunState


@attrs.frozen(slots=True)
class Run:
    """A run from `initial` to `end` (complete, stuck, or the iteration limit)."""

    run_id: str
    initial: Node
    steps: tuple[RunStep, ...]
    end: PlanKind

    @property
    def trees(self) -> tuple[Node, ...]:
        """Every tree of the run in order, `initial` first."""
        return (self.initial, *(step.tree for step in self.steps))

    @property
    def history(self) -> ExecutionHistory:
        return ExecutionHistory.of(step.record for step in self.steps)


RUN_START = datetime(2026, 1, 1, tzinfo=UTC)


def _record(
    run_id: str,
    plan: StepPlan,
    outcome: IterationOutcome,
    execution: int,
    clock: tuple[int, int],
    spending: tuple[TokenUsage | None, float | None],
) -> ExecutionRecord:
    """The iteration's record as the shell writes it; `clock` is (start, duration) in ms."""
    node = plan.node
    after = next((n.attempts for n, _ in preorder(outcome.tree) if n.id == node.id), None)
    kind = outcome.error_kind
    started_ms, duration_ms = clock
    started = RUN_START + timedelta(milliseconds=started_ms)
    assert plan.role is not None
    return ExecutionRecord(
        run_id=run_id,
        node_id=node.id,
        execution=execution,
        iteration=plan.iteration,
        role=plan.role,
        started_at=started.isoformat(),
        ended_at=(started + timedelta(milliseconds=duration_ms)).isoformat(),
        status=outcome.status,
        guard=outcome.guard,
        error_kind=None if kind is None else ErrorKind(kind),
        error=outcome.runner_error if outcome.runner_error is not None else outcome.agent_error,
        tokens=spending[0],
        cost_usd=spending[1],
        duration_ms=duration_ms,
        attempts_before=node.attempts,
        attempts_after=node.attempts if after is None else after,
        backend="command",
    )


guards = st.sampled_from(
    (GuardOutcome.PASS, GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED)
)


@st.composite
def _executor_tree_text(draw: st.DrawFn, prev: Node) -> str:
    """tree.json as an executor leaves it: untouched, edited, or not a tree at all."""
    roll = draw(st.integers(0, 9))
    if roll <= 5:
        return dumps_tree(prev)
    if roll == 9:
        return draw(st.sampled_from(("", "not json", "{}", "[]")))
    kind: EditKind = "passed" if roll == 8 and passed_ids(prev) else "open"
    edited = draw(agent_edits(prev, kind=kind, max_edits=3))
    # Agents may write any order and layout; the runner reads siblings as given.
    return json.dumps(tree_to_json(edited.tree), indent=draw(st.sampled_from((2, None))))


@st.composite
def _agent_turns(draw: st.DrawFn, prev: Node, plan: StepPlan) -> AgentTurn:
    """What the agent and guard of `plan` do: mostly usable work, sometimes not."""
    assert plan.role is not None
    if draw(st.integers(0, 9)) == 9:
        return AgentTurn(runner_error=f"{plan.role.value} agent exited with status 1")
    valid = draw(st.integers(0, 9)) < 9
    if plan.role is AgentRole.DECOMPOSER:
        return AgentTurn(output=draw(decomposer_outputs(valid=valid)))
    return AgentTurn(
        output=draw(executor_outputs(valid=valid)),
        tree_text=draw(_executor_tree_text(prev)),
        guard=draw(guards),
    )


spendings = st.tuples(
    st.none() | st.builds(TokenUsage, *[st.integers(0, 10**6)] * 3),
    st.none() | st.floats(0, 5, allow_nan=False),
)


def runs(
    *, max_iterations: int = 12, max_nodes: int = 8, max_attempts_default: int = 2
) -> st.SearchStrategy[Run]:
    """Runs of at most `max_iterations` iterations from a valid tree of at most `max_nodes`
    nodes, every iteration through `iterate` with drawn agent outputs (usable, refused or
    failing processes), tree edits (open, passed, broken) and guard outcomes.

    Guarantees: every tree of `run.trees` is valid and canonical; records are numbered
    iterations 1..n of one run id, each node's executions 1, 2, ...; each record's
    status/guard is a row of seed 000's table and its attempts_before/after are the selected
    node's before and after; `end` is what plan_step answers after the last step. A
    decomposition adds a level, so a tree is at most 3 + max_iterations levels deep.
    """
    if not 0 <= max_iterations <= 90 or max_attempts_default < 1:
        raise InvalidArgument("max_iterations must be 0..90 and max_attempts_default >= 1")
    return _runs(max_iterations, max_nodes, max_attempts_default)


@st.composite
def _runs(draw: st.DrawFn, max_iterations: int, max_nodes: int, max_attempts_default: int) -> Run:
    tree = initial = draw(
        trees(
            max_nodes=max_nodes,
            max_depth=3,
            max_width=3,
            max_attempts_cap=3,
            # Mostly a fresh run: few passed leaves, few attempts used.
            leaf_passes=st.integers(0, 3).map(lambda n: n == 0),
            attempts=st.sampled_from((0, 0, 0, 0, 1)),
        )
    )
    run_id = "run-" + draw(st.text(alphabet="0123456789abcdef", min_size=8, max_size=8))
    limit = draw(st.just(max_iterations) | st.integers(0, max_iterations))
    state = RunState(run_id=run_id)
    steps: list[RunStep] = []
    executions: dict[str, int] = {}
    elapsed = 0
    while True:
        plan, outcome, state = iterate(
            tree,
            state,
            lambda tree, plan: draw(_agent_turns(tree, plan)),
            max_iterations=limit,
            max_attempts_default=max_attempts_default,
        )
        if outcome is None:
            return Run(run_id, initial, tuple(steps), plan.kind)
        executions[plan.node.id] = executions.get(plan.node.id, 0) + 1
        duration = draw(st.integers(0, 600_000))
        record = _record(
            run_id,
            plan,
            outcome,
            executions[plan.node.id],
            (elapsed, duration),
            draw(spendings),
        )
        elapsed += duration + draw(st.integers(0, 5_000))
        tree = outcome.tree
        steps.append(RunStep(tree, record, outcome, state))
