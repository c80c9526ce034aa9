"""Whole runs driven through the pure iteration machine, for history, report and audit tests.

Decides nothing the runner decides: `iterate` is the one adapter onto the core's iteration
machine (runner_core.iteration.machine): it plans with plan_step, starts the machine and answers
every effect it asks for with the drawn turn's result, one table entry per effect type. Every
tree, record and run state of a run is the machine's own final write-set, so a run is valid
by construction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core import AgentRole, ExecutionHistory, GuardOutcome, Node, dumps_tree, tree_to_json
from runner_core.history.records import ExecutionRecord, TokenUsage
from runner_core.iteration.effects import (
    Abort,
    AgentFinished,
    Commit,
    ConfigRead,
    CountExecutions,
    Done,
    Effect,
    ExecutionsCounted,
    Finished,
    GuardFinished,
    NotStarted,
    Place,
    PrepareIterationDir,
    ReadConfig,
    ReadTree,
    RestoreConfig,
    Result,
    RunAgent,
    RunGuard,
    TreeRead,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.facts import ClockReading, IterationFacts, PromptParts
from runner_core.iteration.machine import start_iteration
from runner_core.iteration.plan import IterationOutcome, PlanKind, RunPlan, StepPlan, plan_step
from runner_core.run.chain import chain_seed
from runner_core.run.config import Config, render_config
from runner_core.run.state import RunState, run_state_from_json
from runner_core.testing.edits import EditKind, agent_edits
from runner_core.testing.outputs import decomposer_outputs, executor_outputs
from runner_core.testing.trees import passed_ids, trees

# What the guard reported when it ran: the machine alone decides when it is skipped.
_GUARD_EXITS = MappingProxyType({GuardOutcome.PASS: 0, GuardOutcome.FAIL: 1})


def _guard_ran(_: Any, __: Any, guard: GuardOutcome) -> None:
    if guard not in _GUARD_EXITS:
        raise ValueError(f"AgentTurn.guard must be pass or fail, not {guard.value}")


@attrs.frozen(slots=True)
class AgentTurn:
    """What the agent and the guard did in one iteration, as the shell reports it.

    `output` is the agent's final JSON value; `tree_text` the tree.json an executor left
    (ignored for a decomposer); `exit_code` the agent's exit status (non-zero is a runner
    error); `runner_error` set when the agent process could not start, in which case nothing
    else is read. `guard` is what the guard reported if the machine runs it (pass or fail),
    `guard_error` set when it could not start. `tokens`, `cost_usd` and `duration_ms` are
    what the shell measured.
    """

    output: Any = None
    tree_text: str = ""
    guard: GuardOutcome = attrs.field(default=GuardOutcome.PASS, validator=_guard_ran)
    runner_error: str | None = None
    exit_code: int = 0
    guard_error: str | None = None
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    duration_ms: int = 0


@attrs.frozen(slots=True)
class RunStep:
    """One iteration of a run: the tree after it, its record (what meta.json holds), the
    core's outcome and run_state after it, all from the machine's final write-set, which
    `commit` is (files and message exactly as the machine asked them written)."""

    tree: Node
    record: ExecutionRecord
    outcome: IterationOutcome
    state: RunState
    commit: Commit


RUN_START = datetime(2026, 1, 1, tzinfo=UTC)
# Longer than any drawn duration: the machine's deadline never cuts a drawn turn short.
ITERATION_TIMEOUT_SECS = 3600


def _reading(ms: float) -> ClockReading:
    """The clocks `ms` milliseconds into the run: monotonic seconds and UTC, from RUN_START."""
    utc = RUN_START + timedelta(milliseconds=int(ms))
    return ClockReading(ms / 1000, utc.isoformat())


def _sha256(tree: Node) -> str:
    """The SHA-256 of the tree's canonical bytes: what the shell reads off tree.json."""
    return hashlib.sha256(dumps_tree(tree).encode("utf-8")).hexdigest()


def _facts(
    tree: Node, state: RunState, plan: RunPlan, config: Config, started_ms: int
) -> IterationFacts:
    run_id = state.run_id
    if run_id is None:
        raise ValueError("iterate needs a run state with a run_id")
    return IterationFacts(
        run_id=run_id,
        plan=plan,
        config=config,
        state=state,
        tree=tree,
        goal=f"---\nid: {run_id}\n---\n\n# Goal\n",
        failure_log=None,
        config_bytes=render_config(config).encode("utf-8"),
        entries=frozenset(),
        previous_snapshot_sha256=_sha256(tree) if plan.iteration > 1 else None,
        prompt=PromptParts("contract", "output", None, None, None, 100_000),
        started=_reading(started_ms),
        runner_pid=1,
        command="runner run",
    )


@attrs.frozen(slots=True)
class _Asked:
    """What an effect is answered from: the iteration's facts and the drawn turn."""

    facts: IterationFacts
    turn: AgentTurn


def _done(effect: Any, asked: _Asked) -> Result:
    return Done()


def _agent(effect: Any, asked: _Asked) -> Result:
    turn = asked.turn
    if turn.runner_error is not None:
        return NotStarted(turn.runner_error)
    text = json.dumps(turn.output)
    return AgentFinished(turn.exit_code, False, text, None, turn.tokens, turn.cost_usd)


def _tree(effect: Any, asked: _Asked) -> Result:
    return TreeRead(asked.turn.tree_text.encode("utf-8"))


def _guard(effect: Any, asked: _Asked) -> Result:
    turn = asked.turn
    if turn.guard_error is not None:
        return NotStarted(turn.guard_error)
    return GuardFinished(_GUARD_EXITS[turn.guard], False)


def _config(effect: Any, asked: _Asked) -> Result:
    return ConfigRead(asked.facts.config_bytes)  # the agent never touches config.toml here


def _counts(effect: Any, asked: _Asked) -> Result:
    # Iteration directories of this run hold exactly the executions the run state counted.
    counts: Mapping[str, int] = asked.facts.state.executions or {}
    return ExecutionsCounted(counts)


# One entry per effect the machine can ask for; a new effect type is one new entry.
_ANSWERS: Mapping[type, Callable[[Any, _Asked], Result]] = MappingProxyType(
    {
        PrepareIterationDir: _done,
        WriteContext: _done,
        WriteJournal: _done,
        WriteIterationFile: _done,
        RunAgent: _agent,
        ReadTree: _tree,
        RunGuard: _guard,
        ReadConfig: _config,
        RestoreConfig: _done,
        CountExecutions: _counts,
        Commit: _done,
    }
)


def answer_effect(effect: Effect, facts: IterationFacts, turn: AgentTurn) -> Result:
    """The pure result of `effect` when the agent and guard did `turn`; TypeError naming
    the effect's type for an effect this table does not know."""
    answer = _ANSWERS.get(type(effect))
    if answer is None:
        raise TypeError(
            f"runner_core.testing.runs cannot answer the effect {type(effect).__name__}:"
            " add it to _ANSWERS"
        )
    return answer(effect, _Asked(facts, turn))


def iterate(
    tree: Node,
    state: RunState,
    turn: Callable[[Node, RunPlan], AgentTurn],
    *,
    max_iterations: int,
    max_attempts_default: int,
    started_ms: int = 0,
) -> tuple[StepPlan, RunStep | None]:
    """One iteration through the core's machine: its plan and, when it ran, the step the
    machine's final write-set describes (None when the run has ended). `turn(tree, plan)` is
    what the agent and guard did with the planned node; the iteration starts `started_ms`
    into the run and takes the turn's `duration_ms`."""
    plan = plan_step(tree, state, max_iterations)
    if plan.kind is not PlanKind.RUN:
        return plan, None
    agent = turn(tree, plan)
    config = Config(
        max_attempts_default=max_attempts_default,
        max_iterations=max_iterations,
        iteration_timeout_secs=ITERATION_TIMEOUT_SECS,
        guard_command=("guard",),
        agent_backend="command",
        agent_command=("agent",),
    )
    facts = _facts(tree, state, plan, config, started_ms)
    # Every result arrives at the turn's end (half a millisecond past it, so the machine's
    # whole milliseconds are the drawn ones).
    now = _reading(started_ms + agent.duration_ms + 0.5)
    machine = start_iteration(facts)
    commit: Commit | None = None
    while not isinstance(machine.effect, Finished | Abort):
        if isinstance(machine.effect, Commit):
            commit = machine.effect
        machine = machine.feed(answer_effect(machine.effect, facts, agent), now)
    if isinstance(machine.effect, Abort) or commit is None:
        raise AssertionError(f"the iteration machine stopped without a commit: {machine.effect}")
    finished = machine.effect
    state = run_state_from_json(json.loads(state_file(commit, "run_state.json")))
    return plan, RunStep(finished.outcome.tree, finished.record, finished.outcome, state, commit)


def state_file(commit: Commit, name: str) -> bytes:
    """The bytes the write-set puts in `.runner/state/<name>` (text is written as UTF-8)."""
    data = next(f.data for f in commit.files if (f.place, f.name) == (Place.STATE, name))
    return data.encode("utf-8") if isinstance(data, str) else data


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


guards = st.sampled_from((GuardOutcome.PASS, GuardOutcome.PASS, GuardOutcome.FAIL))


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


spendings = st.tuples(
    st.none() | st.builds(TokenUsage, *[st.integers(0, 10**6)] * 3),
    st.none() | st.floats(0, 5, allow_nan=False),
)


@st.composite
def _agent_turns(draw: st.DrawFn, prev: Node, plan: RunPlan) -> AgentTurn:
    """What the agent and guard of `plan` do: mostly usable work, sometimes not."""
    tokens, cost = draw(spendings)
    measured = AgentTurn(tokens=tokens, cost_usd=cost, duration_ms=draw(st.integers(0, 600_000)))
    if draw(st.integers(0, 9)) == 9:
        if draw(st.booleans()):
            return attrs.evolve(measured, runner_error=f"cannot start {plan.role.value} agent")
        return attrs.evolve(measured, exit_code=draw(st.sampled_from((1, -9))))
    valid = draw(st.integers(0, 9)) < 9
    if plan.role is AgentRole.DECOMPOSER:
        return attrs.evolve(measured, output=draw(decomposer_outputs(valid=valid)))
    return attrs.evolve(
        measured,
        output=draw(executor_outputs(valid=valid)),
        tree_text=draw(_executor_tree_text(prev)),
        guard=draw(guards),
        guard_error=draw(st.sampled_from((None,) * 19 + ("cannot start guard",))),
    )


def runs(
    *, max_iterations: int = 12, max_nodes: int = 8, max_attempts_default: int = 2
) -> st.SearchStrategy[Run]:
    """Runs of at most `max_iterations` iterations from a valid tree of at most `max_nodes`
    nodes, every iteration through the iteration machine (`iterate`) with drawn agent outputs
    (usable, refused, or processes that fail or never start), tree edits (open, passed,
    broken) and guard results (pass, fail, never started).

    Guarantees: every tree of `run.trees` is valid and canonical; records are numbered
    iterations 1..n of one run id, each node's executions 1, 2, ... (as the run state counts
    them), each lasting its duration_ms from RUN_START on, one after the other; each record's
    status/guard is a row of the state-update table and its attempts_before/after are the selected
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
    state = RunState(run_id=run_id, chain=chain_seed(run_id))  # as `runner start` writes it
    steps: list[RunStep] = []
    elapsed = 0
    while True:
        plan, step = iterate(
            tree,
            state,
            lambda tree, plan: draw(_agent_turns(tree, plan)),
            max_iterations=limit,
            max_attempts_default=max_attempts_default,
            started_ms=elapsed,
        )
        if step is None:
            return Run(run_id, initial, tuple(steps), plan.kind)
        elapsed += step.record.duration_ms + draw(st.integers(0, 5_000))
        tree, state = step.tree, step.state
        steps.append(step)
