"""Which open leaves may start now: the frontier of a run with several slots.

The rule (docs/parallel.md): leaves are taken in canonical order (depth-first, siblings by
`(order, id)`, as `select_leaf` walks), skipping every leaf that has passed, is already
running, or lies below a running node, until `slots` leaves are taken or a stuck leaf is met.
Siblings do not wait for each other, unless they would waste each other's work: a leaf whose
acceptance declares a `files:` pattern a running or taken leaf declares too is passed over, and
a leaf that once conflicted (a merge's rerun, `conflicted`) runs only alone; the walk goes on
past them. A decomposer is a leaf like any other. A stuck leaf that
is not running ends the walk and is reported: the loop's stuck policy (stop, or hand it to the
decomposer) decides what follows it, as with one slot, so with one free slot and nothing
running the frontier is exactly `select_leaf`'s choice. Never changes the tree.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from runner_core.guard.patterns import files_patterns
from runner_core.tree.model import Node, nodes_by_id, sort_key
from runner_core.tree.selection import is_stuck


@attrs.frozen(slots=True)
class FrontierLeaf:
    """A leaf the walk met, and its path (its ids from the root joined by `/`)."""

    node: Node
    path: str


@attrs.frozen(slots=True)
class Frontier:
    """The leaves to start now, in canonical order, and the stuck leaf that ended the walk
    before the free slots were filled (None when none did)."""

    leaves: tuple[FrontierLeaf, ...] = ()
    stuck: FrontierLeaf | None = None


def _waiting_leaves(tree: Node, running: frozenset[str]) -> Iterator[FrontierLeaf]:
    """Every leaf that has not passed, in canonical order, none at or below a running path."""

    def walk(node: Node, path: str) -> Iterator[FrontierLeaf]:
        if path in running:
            return
        if not node.children:
            if not node.passes:
                yield FrontierLeaf(node, path)
            return
        for child in sorted(node.children, key=sort_key):
            yield from walk(child, f"{path}/{child.id}")

    return walk(tree, tree.id)


def frontier(
    tree: Node, slots: int, running: frozenset[str], conflicted: frozenset[str] = frozenset()
) -> Frontier:
    """Up to `slots` leaves to start beside the jobs running the nodes at the paths `running`,
    by the rule above (`conflicted`: the ids of leaves whose work once met another's). `slots`
    counts the free slots only; a negative count is a `ValueError`."""
    if slots < 0:
        raise ValueError(f"slots must be at least 0, not {slots}")
    taken: list[FrontierLeaf] = []
    if slots == 0:
        return Frontier()
    nodes = nodes_by_id(tree) if running else {}
    beside = [
        nodes[path.rsplit("/", 1)[-1]] for path in running if path.rsplit("/", 1)[-1] in nodes
    ]
    for leaf in _waiting_leaves(tree, running):
        if is_stuck(leaf.node):
            return Frontier(tuple(taken), leaf)
        if _kept_apart(leaf.node, [*beside, *(t.node for t in taken)], conflicted):
            continue
        taken.append(leaf)
        if len(taken) == slots:
            break
    return Frontier(tuple(taken))


def _kept_apart(node: Node, others: list[Node], conflicted: frozenset[str]) -> bool:
    """Whether `node` must not run beside `others`: one of them once conflicted (it runs
    alone), or they declare a `files:` pattern in common."""
    if not others:
        return False
    if node.id in conflicted or any(other.id in conflicted for other in others):
        return True
    mine = set(files_patterns(node.acceptance))
    return bool(mine) and any(mine & set(files_patterns(o.acceptance)) for o in others)
