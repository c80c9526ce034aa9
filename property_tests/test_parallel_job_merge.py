"""Properties of a finished job's merge: a parallel run ends as the one-slot run does, and a
job's files sort into clean, both-changed and conflicting paths by the rule of job_merge."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.test_parallel_properties import three_trees
from runner_core import Node, SelectionStatus, select_leaf
from runner_core.audit.iteration_checks import merge_replay_problems
from runner_core.changes.import_rules import EXECUTABLE_MODE, FILE_MODE, Change
from runner_core.history.records import ExecutionHistory, TokenUsage
from runner_core.iteration.plan import Review, conclude
from runner_core.loop.budget import InFlight, with_in_flight
from runner_core.parallel.frontier import frontier
from runner_core.parallel.job_merge import Entry, merge_files, merged_review
from runner_core.parallel.queue import next_to_merge
from runner_core.parallel.tree_merge import TreeConflict, merge_trees, settle
from runner_core.testing import EditedTree, trees
from runner_core.tree.model import AgentStatus, GuardOutcome, nodes_by_id

# Which attempt of which node passes: (node id, attempts used so far) -> the guard's outcome.
Script = Callable[[str, int], bool]


def _open_tree(tree: Node) -> Node:
    """The tree with every node open and unattempted, so that every leaf can still pass."""
    children = tuple(_open_tree(child) for child in tree.children)
    return attrs.evolve(tree, passes=False, attempts=0, children=children)


def _job_tree(base: Node, node_id: str, passes: Script) -> Node:
    """What one iteration of `node_id` commits on `base`: the agent says done, and the guard
    passes as the script says for the attempts the node has used."""
    node = nodes_by_id(base)[node_id]
    guard = GuardOutcome.PASS if passes(node_id, node.attempts) else GuardOutcome.FAIL
    return conclude(base, node_id, Review(AgentStatus.DONE, "done", base), guard).tree


def _one_slot(tree: Node, passes: Script) -> Node:
    while True:
        selection = select_leaf(tree)
        if selection.status is not SelectionStatus.OPEN or selection.node is None:
            return tree
        tree = _job_tree(tree, selection.node.id, passes)


def _parallel(tree: Node, passes: Script, slots: int, order: st.DataObject) -> Node:
    """The merge queue with `slots` slots: jobs start from the head of their time and merge in
    iteration order onto the head; which finished job the loop sees next is drawn."""
    head = tree
    running: dict[int, tuple[str, str, Node]] = {}  # iteration -> (path, node id, base)
    scheduled = merged = 0
    finished: set[int] = set()
    while True:
        paths = frozenset(path for path, _, _ in running.values())
        for leaf in frontier(head, slots - len(running), paths).leaves:
            scheduled += 1
            running[scheduled] = (leaf.path, leaf.node.id, head)
        if not running:
            return head
        waiting = sorted(set(running) - finished)
        if waiting:
            finished.add(order.draw(st.sampled_from(waiting)))
        while (
            number := next_to_merge(frozenset(finished), merged, tuple(sorted(running)))
        ) is not None:
            _, node_id, base = running.pop(number)
            finished.discard(number)
            merged = number
            result = merge_trees(base, head, _job_tree(base, node_id, passes))
            assert not isinstance(result, TreeConflict), result.line
            head = result


@settings(max_examples=60, deadline=None)
@given(
    trees(max_nodes=12, max_attempts_cap=3),
    st.integers(2, 5),
    st.dictionaries(st.text("abcdefgh.0123456789", min_size=1), st.integers(0, 2)),
    st.data(),
)
def test_a_parallel_run_ends_with_the_one_slot_runs_tree(
    drawn: Node, slots: int, failures: Mapping[str, int], order: st.DataObject
) -> None:
    """Each leaf fails a scripted number of times (fewer than its attempts) and then passes:
    whatever the slots and the finish order, the tree ends byte for byte as with one slot,
    with the same passes and the same attempts."""
    tree = _open_tree(drawn)

    def passes(node_id: str, attempts: int) -> bool:
        limit = nodes_by_id(tree)[node_id].max_attempts - 1
        return attempts >= min(failures.get(node_id, 0), limit)

    alone = _one_slot(tree, passes)
    together = _parallel(tree, passes, slots, order)
    assert together == alone
    assert together.passes


modes = st.sampled_from([FILE_MODE, EXECUTABLE_MODE, "120000"])
entries = st.one_of(st.none(), st.tuples(modes, st.sampled_from(["o1", "o2", "o3", "o4"])))


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c/d", "e"]), st.tuples(entries, entries, entries))
)
def test_every_changed_path_is_clean_both_or_a_conflict_by_the_rule(
    sides: Mapping[str, tuple[Entry, Entry, Entry]],
) -> None:
    """A path unchanged at the head, or changed there as the job changed it, is clean; regular
    files of one mode changed differently on both sides are merged line by line; anything else
    changed on both sides conflicts. Each path lands in exactly one of the three."""
    changes = [
        Change(path, None if mine is None else mine[0], None if mine is None else mine[1])
        for path, (_, _, mine) in sorted(sides.items())
    ]
    base = {path: before for path, (before, _, _) in sides.items() if before is not None}
    head = {path: now for path, (_, now, _) in sides.items() if now is not None}
    merge = merge_files(changes, base, head)
    clean = {change.path for change in merge.clean}
    both = {change.path for change in merge.both}
    assert clean | both | set(merge.conflicts) == set(sides)
    assert len(clean) + len(both) + len(merge.conflicts) == len(sides)
    for path, (before, now, mine) in sides.items():
        if now in (before, mine):
            assert path in clean
        elif path in both:
            assert before is not None and now is not None and mine is not None
            assert before[0] == now[0] == mine[0] != "120000"


@given(trees(max_nodes=10, max_attempts_cap=3))
def test_a_job_on_an_unmoved_head_commits_its_own_tree(drawn: Node) -> None:
    """Merged onto the head it started from, a job's reviewed tree is the one its iteration
    would have committed with one slot."""
    tree = _open_tree(drawn)
    selection = select_leaf(tree)
    if selection.node is None:
        return
    node_id = selection.node.id
    review = Review(AgentStatus.DONE, "done", tree)
    merged = merged_review(tree, tree, node_id, review, GuardOutcome.PASS)
    assert isinstance(merged, Review)
    alone = conclude(tree, node_id, review, GuardOutcome.PASS).tree
    assert conclude(tree, node_id, merged, GuardOutcome.PASS).tree == alone


in_flight = st.builds(
    InFlight,
    st.floats(0, 1e5),
    st.just(True),
    st.one_of(
        st.none(),
        st.builds(TokenUsage, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)),
    ),
    st.one_of(st.none(), st.floats(0, 1e3)),
)


@given(st.lists(in_flight, max_size=6))
def test_jobs_in_flight_only_add_to_what_a_budget_sees(jobs: list[InFlight]) -> None:
    """Counting jobs not yet committed never lowers a figure, adds exactly their seconds and
    tokens, and counts nothing when there is none."""
    summary = ExecutionHistory().summary()
    counted = with_in_flight(summary, tuple(jobs))
    if not jobs:
        assert counted == summary
    assert counted.total_duration == pytest.approx(sum(job.secs for job in jobs))
    assert counted.total_tokens.input == sum(job.tokens.input for job in jobs if job.tokens)
    assert counted.total_tokens.output == sum(job.tokens.output for job in jobs if job.tokens)
    costs = [job.cost_usd for job in jobs if job.cost_usd is not None]
    assert counted.total_cost_usd == (
        pytest.approx(sum(costs)) if costs else summary.total_cost_usd
    )


@given(three_trees())
def test_every_merge_the_loop_makes_replays_clean_in_the_audit(
    case: tuple[Node, EditedTree, EditedTree],
) -> None:
    """The audit merges a job's commit onto its parent from the job's base again: a merge the
    loop made always gives itself back, so a clean parallel run has no finding. `ours` is the
    head the job merges onto: a commit of the runner's, so settled (every parent passes iff
    its children do), as the runner writes every tree."""
    base, ours, theirs = case[0], settle(case[1].tree), case[2].tree
    merged = merge_trees(base, ours, theirs)
    if isinstance(merged, TreeConflict):
        return
    assert merge_replay_problems(base, ours, merged) == ()


@given(three_trees())
def test_a_commit_that_drops_work_merged_since_its_base_is_found(
    case: tuple[Node, EditedTree, EditedTree],
) -> None:
    """A job's commit that is its own tree, as if nothing had merged meanwhile, loses the
    head's changes: whenever the head changed a node the job did not, the audit names it."""
    base, ours, theirs = case[0], case[1].tree, case[2].tree
    merged = merge_trees(base, ours, theirs)
    settled_theirs = merge_trees(base, base, theirs)
    if isinstance(merged, TreeConflict) or isinstance(settled_theirs, TreeConflict):
        return
    if merged == settled_theirs:
        return
    assert merge_replay_problems(base, ours, settled_theirs) != ()


@given(st.integers(1, 50), st.integers(0, 10**6), st.floats(0, 1e3), st.integers(1, 8))
def test_a_running_job_counts_as_the_runs_mean_iteration(
    runs: int, tokens: int, cost: float, running: int
) -> None:
    """Jobs whose agents still run count at the run's mean spend per committed iteration, so
    a budget stops the scheduling before their own figures are in."""
    summary = attrs.evolve(
        ExecutionHistory().summary(),
        total_executions=runs,
        total_tokens=TokenUsage(tokens, tokens, 0),
        total_cost_usd=cost,
    )
    counted = with_in_flight(summary, tuple(InFlight(1.0) for _ in range(running)))
    assert counted.total_tokens.input == tokens + running * (tokens // runs)
    assert counted.total_cost_usd == pytest.approx(cost + running * cost / runs)
    nothing_yet = with_in_flight(ExecutionHistory().summary(), (InFlight(1.0),))
    assert nothing_yet.total_cost_usd == ExecutionHistory().summary().total_cost_usd
