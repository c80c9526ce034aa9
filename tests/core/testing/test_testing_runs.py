"""runner_core.testing.runs: `iterate` drives the core's iteration machine, answering each
effect from the drawn turn; what it returns is the machine's own write-set."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from typing import Any, cast

import attrs
import pytest

from runner_core import AgentStatus, GuardOutcome, Node
from runner_core.history.records import ErrorKind, TokenUsage
from runner_core.iteration.effects import Effect
from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.plan import StepPlan
from runner_core.run.state import RunState
from runner_core.testing.runs import AgentTurn, iterate
from tests.helpers.trees import find, node, text_of, tree


def one_leaf() -> Node:
    return tree("root", tree("leaf"))


def run(turn: AgentTurn, root: Node | None = None, started_ms: int = 0) -> Any:
    def agent(tree: Node, plan: StepPlan) -> AgentTurn:
        return turn

    state = RunState(run_id="run-1")
    root = one_leaf() if root is None else root
    plan, step = iterate(
        root, state, agent, max_iterations=5, max_attempts_default=2, started_ms=started_ms
    )
    assert plan.node.id == "leaf" and step is not None
    return step


def done(**changes: Any) -> AgentTurn:
    passed = text_of(node("root", node("leaf")))
    turn = AgentTurn(output={"status": "done", "summary": "did it"}, tree_text=passed)
    return attrs.evolve(turn, **changes)


def test_a_done_turn_is_the_machines_record_tree_and_run_state() -> None:
    turn = done(tokens=TokenUsage(10, 5, 1), cost_usd=0.25, duration_ms=1_234)
    step = run(turn, started_ms=60_000)

    record = step.record
    assert (record.status, record.guard, record.error_kind) == (
        AgentStatus.DONE,
        GuardOutcome.PASS,
        None,
    )
    assert find(step.tree, "leaf").passes and step.tree is step.outcome.tree
    assert (record.execution, record.iteration, record.backend) == (1, 1, "command")
    assert (record.tokens, record.cost_usd, record.duration_ms) == (
        TokenUsage(10, 5, 1),
        0.25,
        1234,
    )
    started, ended = (datetime.fromisoformat(t) for t in (record.started_at, record.ended_at))
    assert started.isoformat() == "2026-01-01T00:01:00+00:00"
    assert ended - started == timedelta(milliseconds=1_234)
    assert (step.state.next_iter, dict(step.state.executions)) == (2, {"leaf": 1})


def test_a_failing_guard_is_the_tables_done_fail_row() -> None:
    step = run(done(guard=GuardOutcome.FAIL))
    assert (step.record.status, step.record.guard) == (AgentStatus.DONE, GuardOutcome.FAIL)
    assert not find(step.tree, "leaf").passes and step.record.attempts_after == 1


@pytest.mark.parametrize(
    ("turn", "error"),
    [
        (AgentTurn(runner_error="cannot start executor agent"), "cannot start executor agent"),
        (AgentTurn(exit_code=1), "executor agent exited with status 1"),
        (AgentTurn(exit_code=-9), "executor agent was killed by signal 9"),
        (done(guard_error="cannot start guard"), "cannot start guard"),
        (AgentTurn(output={"summary": 1}), None),
    ],
)
def test_a_process_that_fails_or_never_starts_is_a_runner_error(
    turn: AgentTurn, error: str | None
) -> None:
    step = run(turn)
    assert step.record.error_kind is ErrorKind.RUNNER
    if error is not None:
        assert step.record.error == error
    assert step.tree == one_leaf() and step.record.attempts_after == 0


def test_a_decomposer_turn_adds_the_children_it_output() -> None:
    child = {"title": "t", "goal": "g", "acceptance": ["a"], "next": "execute"}
    root = tree("root", tree("leaf", next="decompose"))
    step = run(AgentTurn(output={"summary": "split", "children": [child]}), root)
    assert step.record.status is AgentStatus.DECOMPOSED
    assert [c.id for c in find(step.tree, "leaf").children] == ["leaf.1"]


def test_a_guard_outcome_the_machine_alone_decides_is_refused() -> None:
    with pytest.raises(ValueError, match=r"AgentTurn\.guard must be pass or fail, not skipped"):
        AgentTurn(guard=GuardOutcome.SKIPPED)


@attrs.frozen
class EffectFromAnotherBranch:
    """An effect this module's answer table has no entry for."""


def test_an_effect_without_an_answer_fails_naming_its_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def machine_with_a_new_effect(facts: IterationFacts) -> IterationMachine:
        # No effect of the union lacks an answer, so a stand-in goes where one would.
        stand_in = cast(Effect, EffectFromAnotherBranch())
        return attrs.evolve(start_iteration(facts), effect=stand_in)

    # The package's `runs` is the strategy, which hides the module of the same name.
    runs_module = sys.modules["runner_core.testing.runs"]
    monkeypatch.setattr(runs_module, "start_iteration", machine_with_a_new_effect)
    with pytest.raises(TypeError, match="cannot answer the effect EffectFromAnotherBranch"):
        run(done())
