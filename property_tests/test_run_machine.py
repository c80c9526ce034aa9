"""Whole runs driven through the pure step functions with random agents and guards."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from runner_core import (
    AgentRole,
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    SelectionStatus,
    count_nodes,
    dumps_tree,
    parse_tree,
    select_leaf,
    tree_to_json,
)
from runner_core.iteration.plan import (
    AgentOutputError,
    IterationOutcome,
    PlanKind,
    advance_run_state,
    conclude,
    conclude_runner_error,
    context_files,
    needs_failure_log,
    plan_step,
    review_decomposition,
    review_execution,
)
from runner_core.run.state import RunState
from runner_core.testing import reference_select_leaf, trees
from runner_core.testing.edits import (
    Chooser,
    DrawChooser,
    choose_bool,
    choose_from,
    open_edits_of,
    passed_edit,
    runner_owned_edit,
)
from runner_core.testing.trees import passed_ids, preorder
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.schema import schema_findings

# What a seeded run's agent writes: plain letters, JSON escapes and multi-byte characters.
RANDOM_TEXT_CHARS = 'ab z"\\\n\t\x00é€😀'


@dataclass(frozen=True)
class RandomChooser:
    """Choices from a seeded Random, to drive a run to its end outside Hypothesis's control."""

    rng: random.Random

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self) -> str:
        return "".join(self.rng.choice(RANDOM_TEXT_CHARS) for _ in range(self.rng.randint(0, 8)))


MAX_CHILDREN = 3  # W: children one decomposition adds at most
MAX_ATTEMPTS_CAP = 3  # max_attempts of any node: initial, default or written by the agent


def generations(count: int) -> int:
    """Σ_{g=0..count-1} W^g: how many nodes one node can become over `count` generations."""
    total, width = 0, 1
    for _ in range(count):
        total, width = total + width, width * MAX_CHILDREN
    return total


def index(tree: Node) -> dict[str, tuple[Node, str | None]]:
    return {
        node.id: (node, None if parent is None else parent.id) for node, parent in preorder(tree)
    }


class RunMachine(RuleBasedStateMachine):
    """A run from a random valid tree, one iteration per step, through plan_step →
    review_decomposition (a generated decomposer output) or review_execution (an executor
    output and the tree text it left, possibly edited) → conclude with a random guard outcome,
    or conclude_runner_error → advance_run_state.

    After every iteration: the tree is valid (schema_findings of tree_to_json and
    invariant_findings are empty) and canonical; every parent passes iff all its children
    pass; attempts <= max_attempts; every node that had passed is unchanged and under the same
    parent; no node's passes/attempts moved except the selected node's, by one table row;
    an agent error leaves the previous tree with one more attempt on the selected node; a
    runner error leaves the previous tree as it was and hides its message from the next prompt.

    Termination. Let N0 be the initial node count, W = MAX_CHILDREN, D the decomposition depth
    bound, M the largest max_attempts any node can have, B the idle budget. The machine's
    decomposer succeeds at most once per node id and only for nodes of generation < D
    (initial nodes are generation 0, a child is one more than its parent), so at most
    N0·W^g nodes of generation g are ever created, E = N0·Σ_{g=0..D} W^g node instances in
    all, and at most N0·Σ_{g=0..D-1} W^g iterations decompose. Every other iteration
    - consumes an attempt of the selected leaf: at most M per instance, since a leaf at its
      maximum is stuck and ends the run;
    - completes the leaf: at most once per instance, since passed nodes never change;
    - leaves the leaf stuck without consuming an attempt (the agent lowered its max_attempts
      to the attempts used, and the retry saturated): at most once, since the run then ends;
    - or is idle: a runner error, or `done` with a skipped guard; neither changes a
      runner-owned field, and the machine injects at most B of them.
    So a run is complete or stuck after at most

        B + N0·Σ_{g=0..D-1} W^g + E·(M + 1)

    iterations (the stuck-without-consuming iteration takes the place of the attempt it did
    not consume). plan_step is given that bound as max_iterations and must never answer
    LIMIT. Hypothesis chooses the first iterations; teardown drives the rest from a seeded
    Random until the run ends.
    """

    def __init__(self) -> None:
        super().__init__()
        self.started = False

    @initialize(
        tree=trees(
            max_depth=3,
            max_width=3,
            max_nodes=12,
            max_attempts_cap=MAX_ATTEMPTS_CAP,
            # Mostly a fresh run: few passed leaves, few attempts used.
            leaf_passes=st.integers(0, 3).map(lambda n: n == 0),
            attempts=st.sampled_from((0, 0, 0, 1, 2)),
        ),
        depth_bound=st.integers(1, 3),
        max_attempts_default=st.integers(1, MAX_ATTEMPTS_CAP),
        idle_budget=st.integers(0, 4),
        seed=st.integers(0, 2**32 - 1),
    )
    def start(
        self, tree: Node, depth_bound: int, max_attempts_default: int, idle_budget: int, seed: int
    ) -> None:
        self.tree = tree
        self.state = RunState(run_id="run-props", next_iter=1)
        self.depth_bound = depth_bound
        self.max_attempts_default = max_attempts_default
        self.idle_budget = idle_budget
        self.seed = seed
        self.generation = {node.id: 0 for node, _ in preorder(tree)}
        self.decomposed: set[str] = set()
        self.idle = self.decompositions = self.progress = self.iterations = 0
        self.end: PlanKind | None = None
        max_attempts = max(
            [MAX_ATTEMPTS_CAP, max_attempts_default] + [n.max_attempts for n, _ in preorder(tree)]
        )
        nodes = count_nodes(tree)
        self.decomposition_bound = nodes * generations(depth_bound)
        self.progress_bound = nodes * generations(depth_bound + 1) * (max_attempts + 1)
        self.bound = idle_budget + self.decomposition_bound + self.progress_bound
        self.started = True

    @rule(data=st.data())
    def iterate(self, data: st.DataObject) -> None:
        """One iteration, every agent and guard outcome drawn by Hypothesis."""
        self.step(DrawChooser(data.draw))

    def teardown(self) -> None:
        if not self.started:
            return
        choose = RandomChooser(random.Random(self.seed))
        while self.end is None:
            self.step(choose)
        self.step(choose)  # An ended run stays ended.

    # ------------------------------------------------------------ one iteration

    def step(self, choose: Chooser) -> None:
        plan = plan_step(self.tree, self.state, self.bound)
        assert plan.kind is not PlanKind.LIMIT, f"no end after {self.bound} iterations"
        assert plan.iteration == self.state.next_iter
        if plan.kind is not PlanKind.RUN:
            self.check_end(plan.kind, plan.selection.node)
            return
        assert self.end is None, "an ended run started again"
        node = plan.node
        decomposing = node.next is NodeNext.DECOMPOSE
        assert plan.role is (AgentRole.DECOMPOSER if decomposing else AgentRole.EXECUTOR)
        prev = self.tree
        idle_left = self.idle < self.idle_budget
        if idle_left and choose.integer(0, 7) == 7:
            outcome = conclude_runner_error(prev, "agent exited with status 1")
        elif plan.role is AgentRole.DECOMPOSER:
            outcome = self.decompose(choose, prev, node, idle_left=idle_left)
        else:
            outcome = self.execute(choose, prev, node, idle_left=idle_left)
        self.check_outcome(prev, node, outcome)
        self.check_run_state(outcome)
        self.tree = outcome.tree
        self.iterations += 1

    def decompose(
        self, choose: Chooser, prev: Node, node: Node, *, idle_left: bool
    ) -> IterationOutcome:
        generation = self.generation[node.id]
        may_split = node.id not in self.decomposed and generation < self.depth_bound
        roll = choose.integer(0, 9)
        output: Any
        if roll == 9 and idle_left:
            output = choose_from(choose, ({"summary": "s"}, {"summary": 1, "children": []}))
        elif roll == 8 or not may_split:
            blank = {"title": " ", "goal": "g", "acceptance": [], "next": "execute"}
            output = {"summary": choose.text(), "children": choose_from(choose, ([], [blank]))}
        else:
            children = [
                self.child_spec(choose, generation + 1)
                for _ in range(choose.integer(1, MAX_CHILDREN))
            ]
            output = {"summary": choose.text(), "children": children}
        try:
            review = review_decomposition(prev, node.id, output, self.max_attempts_default)
        except AgentOutputError as error:
            return conclude_runner_error(prev, str(error))
        outcome = conclude(prev, node.id, review, choose_from(choose, list(GuardOutcome)))
        if outcome.status is AgentStatus.DECOMPOSED:
            self.decomposed.add(node.id)
            before = index(prev)
            for new_id in index(outcome.tree).keys() - before.keys():
                self.generation[new_id] = generation + 1
        return outcome

    def child_spec(self, choose: Chooser, generation: int) -> dict[str, Any]:
        splits = generation < self.depth_bound and choose_bool(choose)
        return {
            "title": "t " + choose.text(),
            "goal": "g " + choose.text(),
            "acceptance": [choose.text() for _ in range(choose.integer(0, 2))],
            "next": "decompose" if splits else "execute",
        }

    def execute(
        self, choose: Chooser, prev: Node, node: Node, *, idle_left: bool
    ) -> IterationOutcome:
        output: Any
        if idle_left and choose.integer(0, 9) == 9:
            output = choose_from(choose, ({"status": "finished", "summary": ""}, ["done"]))
        else:
            # Mostly `done` and mostly a passing guard, so runs live long enough to grow.
            status = "retry" if choose.integer(0, 3) == 3 else "done"
            output = {"status": status, "summary": choose.text()}
        text = self.agent_tree_text(choose, prev)
        try:
            review = review_execution(prev, node.id, output, text)
        except AgentOutputError as error:
            return conclude_runner_error(prev, str(error))
        if review.needs_guard:
            roll = choose.integer(0, 4)
            guard = GuardOutcome.FAIL if roll == 4 else GuardOutcome.PASS
            if roll == 3 and idle_left:
                guard = GuardOutcome.SKIPPED
        else:
            guard = choose_from(choose, list(GuardOutcome))
        return conclude(prev, node.id, review, guard)

    def agent_tree_text(self, choose: Chooser, prev: Node) -> str:
        """tree.json as the executor leaves it: untouched, edited, or broken."""
        roll = choose.integer(0, 11)
        if roll <= 4:
            return dumps_tree(prev)
        root = tree_to_json(prev)
        if roll == 9 and (found := passed_edit(choose, root, passed_ids(prev))) is not None:
            root = found[0].applied_to(root)
        elif roll == 10:
            for _ in range(choose.integer(1, 3)):
                edit = runner_owned_edit(choose, root, valid=choose_bool(choose))
                assert edit is not None
                root = edit.applied_to(root)
        elif roll == 11:
            text = dumps_tree(prev)
            return choose_from(choose, ("", "not json", "{}", text[: len(text) // 2], "[]"))
        else:
            edited = open_edits_of(
                choose,
                prev,
                choose.integer(1, 3),
                rewrite_runner_owned=True,
                lower_max_attempts=choose.integer(0, 3) == 3,
            )
            root = tree_to_json(edited.tree)
        # Agents may write any order and layout; the runner reads siblings as given.
        return json.dumps(root, indent=choose_from(choose, (2, None)), ensure_ascii=False)

    # ------------------------------------------------------------ checks

    def check_end(self, kind: PlanKind, leaf: Node | None) -> None:
        reference = reference_select_leaf(self.tree)
        if kind is PlanKind.COMPLETE:
            assert reference.status is SelectionStatus.COMPLETE
            assert self.tree.passes
        else:
            assert kind is PlanKind.STUCK
            assert reference.status is SelectionStatus.STUCK
            assert leaf is reference.node
        assert self.end in (None, kind)
        self.end = kind

    def check_outcome(self, prev: Node, selected: Node, outcome: IterationOutcome) -> None:
        tree = outcome.tree
        assert messages(schema_findings(tree_to_json(tree))) == ()
        assert messages(invariant_findings(tree)) == ()
        assert parse_tree(dumps_tree(tree)) == tree
        for node, _ in preorder(tree):
            if node.children:
                assert node.passes == all(child.passes for child in node.children)
            assert 0 <= node.attempts <= node.max_attempts

        before, after = index(prev), index(tree)
        for node_id, (node, parent) in before.items():
            if node.passes:
                assert after[node_id] == (node, parent), f"passed node {node_id!r} changed"
        for node_id, (node, _) in after.items():
            if node_id == selected.id:
                continue
            if node_id not in before:
                assert (node.passes, node.attempts) == (False, 0)
                continue
            old = before[node_id][0]
            assert node.attempts == old.attempts
            if old.is_leaf and node.is_leaf:
                assert node.passes == old.passes

        old_selected = before[selected.id][0]
        new_selected = after[selected.id][0] if selected.id in after else None
        if outcome.runner_error is not None:
            assert tree == prev
            assert outcome.update is None
            self.idle += 1
        elif outcome.agent_error is not None:
            assert (outcome.status, outcome.guard) == (AgentStatus.RETRY, GuardOutcome.SKIPPED)
            assert outcome.summary == outcome.agent_error
            expected = tree_to_json(prev)
            self.find_json(expected, selected.id)["attempts"] += 1
            assert tree_to_json(tree) == expected, "an agent error kept the agent's edits"
            self.progress += 1
        elif outcome.status is AgentStatus.DECOMPOSED:
            assert new_selected is not None and old_selected.is_leaf
            assert not new_selected.is_leaf
            assert outcome.guard is GuardOutcome.SKIPPED
            self.decompositions += 1
        else:
            assert new_selected is not None
            completed = new_selected.passes and not old_selected.passes
            consumed = new_selected.attempts == old_selected.attempts + 1
            # The agent may lower the selected node's max_attempts to the attempts it used: a
            # retry then saturates, and the leaf is stuck, which ends the run.
            exhausted = (
                not new_selected.passes and new_selected.attempts >= new_selected.max_attempts
            )
            if completed or consumed:
                assert (outcome.status, outcome.guard) in (
                    (AgentStatus.DONE, GuardOutcome.PASS),
                    (AgentStatus.DONE, GuardOutcome.FAIL),
                    (AgentStatus.RETRY, GuardOutcome.SKIPPED),
                )
                self.progress += 1
            elif exhausted:
                self.progress += 1
            else:
                assert (outcome.status, outcome.guard) == (AgentStatus.DONE, GuardOutcome.SKIPPED)
                assert new_selected.attempts == old_selected.attempts
                self.idle += 1
        assert self.idle <= self.idle_budget
        assert self.decompositions <= self.decomposition_bound
        assert self.progress <= self.progress_bound

    @staticmethod
    def find_json(root: dict[str, Any], node_id: str) -> dict[str, Any]:
        stack = [root]
        while stack:
            node = stack.pop()
            if node["id"] == node_id:
                return node
            stack.extend(node["children"])
        raise AssertionError(f"no node {node_id!r}")

    def check_run_state(self, outcome: IterationOutcome) -> None:
        state = advance_run_state(self.state, outcome)
        assert state.next_iter == self.state.next_iter + 1
        assert (state.last_status, state.last_guard) == (outcome.status, outcome.guard)
        context = context_files(self.tree, "goal", state, "guard log")
        if outcome.runner_error is not None:
            assert state.last_summary == ""
            assert "history.md" not in context
        else:
            assert state.last_summary == outcome.summary
        if outcome.agent_error is not None:
            assert outcome.agent_error in context["history.md"]
        failed = (outcome.status, outcome.guard) == (AgentStatus.DONE, GuardOutcome.FAIL)
        assert needs_failure_log(state) == failed
        assert ("failure.md" in context) == failed
        self.state = state


TestRunMachine = RunMachine.TestCase
TestRunMachine.settings = settings(stateful_step_count=40)


@st.composite
def executions(draw: st.DrawFn) -> tuple[Node, str, dict[str, str], str, GuardOutcome]:
    """A tree with an open leaf to execute, an executor output, the tree text it left after
    edits to open nodes (max_attempts lowered too) and the guard outcome."""
    prev = draw(trees(max_nodes=10).filter(lambda t: select_leaf(t).status is SelectionStatus.OPEN))
    choose = DrawChooser(draw)
    edited = open_edits_of(
        choose, prev, choose.integer(0, 4), rewrite_runner_owned=True, lower_max_attempts=True
    )
    selection = select_leaf(prev)
    assert selection.node is not None
    output = {"status": draw(st.sampled_from(("done", "retry"))), "summary": draw(st.text())}
    return (
        prev,
        selection.node.id,
        output,
        dumps_tree(edited.tree),
        draw(st.sampled_from(GuardOutcome)),
    )


@given(executions())
def test_a_reviewed_execution_always_leaves_a_valid_tree(
    case: tuple[Node, str, dict[str, str], str, GuardOutcome],
) -> None:
    """Whatever an executor does to open nodes (max_attempts lowered below the attempts used
    included), conclude(review_execution(...)) is a valid tree: schema, invariants (so
    attempts <= max_attempts) and derived passes."""
    prev, selected, output, text, guard = case
    outcome = conclude(prev, selected, review_execution(prev, selected, output, text), guard)
    assert messages(schema_findings(tree_to_json(outcome.tree))) == ()
    assert messages(invariant_findings(outcome.tree)) == ()
    for node, _ in preorder(outcome.tree):
        if node.children:
            assert node.passes == all(child.passes for child in node.children)
