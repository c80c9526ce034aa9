"""Properties of parallel iterations: the frontier, the three-way tree merge, the merge queue."""

from __future__ import annotations

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st

from runner_core import Node, SelectionStatus, is_stuck, select_leaf
from runner_core.guard.patterns import files_patterns
from runner_core.parallel.frontier import frontier
from runner_core.parallel.queue import next_to_merge
from runner_core.parallel.tree_merge import merge_trees, settle
from runner_core.testing import EditedTree, agent_edits, trees
from runner_core.testing.trees import preorder
from runner_core.tree.diff import DIFFED_FIELDS, ChangeKind, tree_diff
from runner_core.tree.model import canonical_preorder

# Canonical or not, passes derived or drawn freely: like selection, the frontier reads only
# leaves and sorts siblings itself.
frontier_trees = st.tuples(st.booleans(), st.booleans()).flatmap(
    lambda flags: trees(max_attempts_cap=2, canonical=flags[0], derived_passes=flags[1])
)


@st.composite
def trees_with_running(draw: st.DrawFn) -> tuple[Node, frozenset[str]]:
    tree = draw(frontier_trees)
    paths = [path for _, path, _ in canonical_preorder(tree)]
    return tree, frozenset(draw(st.lists(st.sampled_from(paths), max_size=3)))


@given(frontier_trees)
def test_one_free_slot_with_nothing_running_is_select_leaf(tree: Node) -> None:
    """With one slot and nothing running the frontier is today's choice: the selected leaf
    when it is open, nothing (and the leaf reported stuck) when it is stuck, nothing when the
    tree is complete."""
    selection = select_leaf(tree)
    found = frontier(tree, 1, frozenset())
    if selection.status is SelectionStatus.OPEN:
        assert [(leaf.node, leaf.path) for leaf in found.leaves] == [
            (selection.node, selection.path)
        ]
        assert found.stuck is None
    else:
        assert found.leaves == ()
        stuck = None if found.stuck is None else (found.stuck.node, found.stuck.path)
        expected = (selection.node, selection.path) if selection.node is not None else None
        assert stuck == expected


@given(trees_with_running(), st.integers(0, 6))
def test_the_frontier_takes_only_open_leaves_in_canonical_order(
    case: tuple[Node, frozenset[str]], slots: int
) -> None:
    """Never more than `slots` leaves; each a leaf that has not passed, is not stuck and is
    neither running nor below a running node; in canonical order; the same answer each time."""
    tree, running = case
    found = frontier(tree, slots, running)
    position = {path: index for index, (_, path, _) in enumerate(canonical_preorder(tree))}
    assert len(found.leaves) <= slots
    for leaf in found.leaves:
        assert not leaf.node.children and not leaf.node.passes and not is_stuck(leaf.node)
        assert not any(leaf.path == run or leaf.path.startswith(run + "/") for run in running)
    places = [position[leaf.path] for leaf in found.leaves]
    assert places == sorted(places)
    assert frontier(tree, slots, running) == found


@given(trees_with_running(), st.integers(0, 5))
def test_one_more_slot_only_adds_leaves_after_the_others(
    case: tuple[Node, frozenset[str]], slots: int
) -> None:
    """The frontier of n slots is the start of the frontier of n + 1: a free slot never
    changes which leaves come first."""
    tree, running = case
    fewer, more = frontier(tree, slots, running), frontier(tree, slots + 1, running)
    assert more.leaves[: len(fewer.leaves)] == fewer.leaves


def reference_frontier(
    tree: Node, slots: int, running: frozenset[str]
) -> tuple[list[str], str | None]:
    """The rule by brute force: every leaf in canonical order, the passed ones and those at or
    below a running path dropped, cut at the first stuck one, then the first `slots`."""
    waiting = [
        (node, path)
        for node, path, _ in canonical_preorder(tree)
        if not node.children
        and not node.passes
        and not any(path == run or path.startswith(run + "/") for run in running)
    ]
    taken: list[str] = []
    for node, path in waiting:
        if len(taken) == slots:
            break
        if is_stuck(node):
            return taken, path
        taken.append(path)
    return taken, None


@given(trees_with_running(), st.integers(0, 6))
def test_the_frontier_agrees_with_the_rule_by_brute_force(
    case: tuple[Node, frozenset[str]], slots: int
) -> None:
    """The frontier's leaves and stuck leaf are the brute-force reading of the rule's."""
    tree, running = case
    found = frontier(tree, slots, running)
    stuck = None if found.stuck is None else found.stuck.path
    assert ([leaf.path for leaf in found.leaves], stuck) == reference_frontier(tree, slots, running)


# ---------------------------------------------------------------- the tree merge

merge_bases = trees(max_nodes=12, max_attempts_cap=3)


@st.composite
def three_trees(draw: st.DrawFn) -> tuple[Node, EditedTree, EditedTree]:
    """A base and two sides, each an agent's edits settled as the runner writes trees."""
    base = draw(merge_bases)
    ours, theirs = draw(agent_edits(base, max_edits=3)), draw(agent_edits(base, max_edits=3))
    return base, ours, theirs


@given(three_trees())
def test_merging_a_side_with_the_base_gives_that_side(
    case: tuple[Node, EditedTree, EditedTree],
) -> None:
    """merge(b, x, b) == x == merge(b, b, x) == merge(b, x, x) for a settled tree x."""
    base, edited, _ = case
    side = settle(edited.tree)
    assert merge_trees(base, side, base) == side
    assert merge_trees(base, base, side) == side
    assert merge_trees(base, side, side) == side


@given(three_trees())
def test_the_merge_is_symmetric(case: tuple[Node, EditedTree, EditedTree]) -> None:
    """Swapping the sides gives the same tree, or the same conflict."""
    base, ours, theirs = case
    left, right = settle(ours.tree), settle(theirs.tree)
    assert merge_trees(base, left, right) == merge_trees(base, right, left)


def touched(base: Node, side: Node) -> set[str]:
    """Every node a side changed, added or removed, and the parents it added to, removed from
    or moved between."""
    found: set[str] = set()
    for change in tree_diff(base, side).changes:
        found.add(change.node_id)
        if change.kind is not ChangeKind.CHANGED or change.moved:
            found.update(parent for parent in (change.parent_before, change.parent_after) if parent)
    return found


def places(tree: Node) -> dict[str, tuple[object, ...]]:
    """Each node's parent and own fields, a parent's derived `passes` left out."""
    return {
        node.id: (
            parent.id if parent else None,
            *(
                getattr(node, name)
                for name in DIFFED_FIELDS
                if not (node.children and name == "passes")
            ),
        )
        for node, parent in preorder(tree)
    }


@st.composite
def sides_in_different_subtrees(draw: st.DrawFn) -> tuple[Node, Node, Node]:
    """A base of two or more top-level subtrees and two sides, each an agent's edits to a
    different one of them, settled."""
    base = draw(merge_bases.filter(lambda tree: len(tree.children) >= 2))
    chosen = st.integers(0, len(base.children) - 1)
    picks = draw(st.lists(chosen, min_size=2, max_size=2, unique=True))

    def side(pick: int) -> Node:
        edited = draw(
            agent_edits(base.children[pick], max_edits=3).filter(lambda made: made.edits)
        ).tree
        kids = tuple(edited if at == pick else kid for at, kid in enumerate(base.children))
        return settle(attrs.evolve(base, children=kids))

    return base, side(picks[0]), side(picks[1])


settled_sides = st.one_of(
    three_trees().map(lambda case: (case[0], settle(case[1].tree), settle(case[2].tree))),
    sides_in_different_subtrees(),
)


@given(settled_sides)
def test_edits_to_different_nodes_merge_and_hold_both(case: tuple[Node, Node, Node]) -> None:
    """When the sides touch no node in common the merge succeeds, and each node is where and
    what the side that touched it made it (the base's when neither did); only parents' passes,
    derived, may differ from every side's."""
    base, left, right = case
    by_left, by_right = touched(base, left), touched(base, right)
    assume(not by_left & by_right)
    result = merge_trees(base, left, right)
    assert isinstance(result, Node)
    sides = (places(left), places(right), places(base))
    expected = {}
    for node_id in sides[0].keys() | sides[1].keys() | sides[2].keys():
        side = sides[0] if node_id in by_left else sides[1] if node_id in by_right else sides[2]
        if node_id in side:
            expected[node_id] = side[node_id]
    assert places(result) == expected


# ---------------------------------------------------------------- the merge queue


@given(st.integers(1, 8).flatmap(lambda n: st.permutations(range(1, n + 1))))
def test_whatever_the_finish_order_jobs_merge_in_iteration_order(finish: list[int]) -> None:
    """Jobs finishing in any order merge one by one in their iteration order, each only after
    it finished."""
    scheduled = tuple(sorted(finish))
    finished: set[int] = set()
    merged: list[int] = []
    for job in finish:
        finished.add(job)
        while ready := next_to_merge(frozenset(finished), merged[-1] if merged else 0, scheduled):
            assert ready in finished
            merged.append(ready)
    assert merged == list(scheduled)


# ---------------------------------------------------------------- leaves kept apart

PATTERNS = ("src/index.js", "src/a.js", "lib/*.go")


@st.composite
def trees_declaring_files(
    draw: st.DrawFn,
) -> tuple[Node, frozenset[str], frozenset[str]]:
    """A tree whose leaves each declare up to two `files:` patterns of a few, some paths
    running, and some leaves' ids among those that once conflicted."""
    tree, running = draw(trees_with_running())

    def declare(node: Node) -> Node:
        picked = draw(st.lists(st.sampled_from(PATTERNS), max_size=2, unique=True))
        lines = (*node.acceptance, *(f"files: {pattern}" for pattern in picked))
        children = tuple(declare(child) for child in node.children)
        return attrs.evolve(node, acceptance=lines, children=children)

    declared = declare(tree)
    ids = [node.id for node, _, _ in canonical_preorder(declared)]
    conflicted = frozenset(draw(st.lists(st.sampled_from(ids), max_size=3)))
    return declared, running, conflicted


@given(trees_declaring_files(), st.integers(0, 6))
def test_leaves_that_would_waste_each_others_work_never_run_together(
    case: tuple[Node, frozenset[str], frozenset[str]], slots: int
) -> None:
    """No leaf the frontier takes shares a `files:` pattern with another it takes or with a
    running one, and a leaf that once conflicted is taken only alone, nothing running."""
    tree, running, conflicted = case
    found = frontier(tree, slots, running, conflicted)
    nodes = {path: node for node, path, _ in canonical_preorder(tree)}
    beside = [nodes[path] for path in running]
    taken = [leaf.node for leaf in found.leaves]
    for index, node in enumerate(taken):
        others = [*beside, *taken[:index], *taken[index + 1 :]]
        mine = set(files_patterns(node.acceptance))
        assert not any(mine & set(files_patterns(other.acceptance)) for other in others)
        if node.id in conflicted or any(other.id in conflicted for other in others):
            assert others == []
