"""Valid task trees by construction, as `Node`s, JSON data or canonical text.

Decides nothing the runner decides: ids are unique and usable, `0 <= attempts <=
max_attempts`, `max_attempts > 0`, at most `max_depth` levels (the root is level 1, as in the
runner's MAX_DEPTH) and, unless asked otherwise, a parent passes iff all its children pass.
Every value reads back through `parse_tree(dumps_tree(tree))` unchanged.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core import Node, NodeNext, dumps_tree, tree_to_json
from runner_core.tree.model import MAX_DEPTH
from runner_core.validation.invariants import id_problem

JsonNode = dict[str, Any]

# Half the ids come from a small alphabet, which makes `(order, id)` ties, shared prefixes and
# `<parent>.<n>` look-alikes common; the other half from every character an id may hold (all
# of Unicode but whitespace, `=`, `/`, control characters and surrogates), so a tool that
# mangles anything outside ASCII or Latin-1 is caught.
ID_ALPHABET = "abxy019._-é"
ASCII_ID_ALPHABET = "abxy019._-"


def id_strategy(*, ascii_only: bool = False) -> st.SearchStrategy[str]:
    """Usable node ids of 1-4 characters; `ascii_only` keeps them to ASCII, for testing a tool
    that handles nothing else (the runner itself takes any id `id_problem` allows)."""
    characters = st.characters(
        codec="ascii" if ascii_only else "utf-8", exclude_categories=("Cc", "Cs")
    ).filter(lambda char: id_problem(char) is None)
    small = st.text(alphabet=ASCII_ID_ALPHABET if ascii_only else ID_ALPHABET, min_size=1)
    return st.one_of(
        small.filter(lambda text: len(text) <= 4), st.text(characters, min_size=1, max_size=4)
    )


ids = id_strategy()
# Free text: any code point but surrogates, which UTF-8 cannot encode.
texts = st.text(max_size=12)
orders = st.integers(min_value=-3, max_value=3)


def _check_bounds(max_depth: int, max_width: int, max_nodes: int, max_attempts_cap: int) -> None:
    if not 1 <= max_depth <= MAX_DEPTH:
        raise InvalidArgument(f"max_depth={max_depth} must be between 1 and {MAX_DEPTH}")
    if max_width < 0 or max_nodes < 1 or max_attempts_cap < 1:
        raise InvalidArgument("max_width must be >= 0, max_nodes and max_attempts_cap >= 1")


def trees(
    *,
    max_nodes: int = 25,
    max_depth: int = 4,
    max_width: int = 4,
    max_attempts_cap: int = 4,
    passed: bool | None = None,
    derived_passes: bool = True,
    canonical: bool | None = True,
    leaf_passes: st.SearchStrategy[bool] | None = None,
    attempts: st.SearchStrategy[int] | None = None,
    ascii_ids: bool = False,
) -> st.SearchStrategy[Node]:
    """Valid trees of at most `max_nodes` nodes, `max_depth` levels (the root alone is one)
    and `max_width` children per node, each with `1 <= max_attempts <= max_attempts_cap`.

    Guarantees: unique usable ids, `0 <= attempts <= max_attempts`; `passed=True` holds at
    least one passed node, `passed=False` none, `None` either. With `derived_passes` a parent
    passes iff all its children pass; without, every node's `passes` is drawn freely (a parent
    may disagree with its children: what an agent may write, still schema-valid). Siblings are
    in `(order, id)` order when `canonical`, as drawn when False, either when None.
    `leaf_passes` draws a leaf's `passes`; `attempts` a node's attempts (capped at its
    max_attempts), else any of `0..max_attempts`. Ids are drawn from all of Unicode an id may
    hold, or from ASCII alone with `ascii_ids` (`id_strategy`).
    """
    _check_bounds(max_depth, max_width, max_nodes, max_attempts_cap)
    if passed is False:
        leaf_passes = st.just(False)
    orders_of_siblings = st.booleans() if canonical is None else st.just(canonical)
    return orders_of_siblings.flatmap(
        lambda sort: _trees(
            max_nodes=max_nodes,
            max_depth=max_depth,
            max_width=max_width,
            max_attempts_cap=max_attempts_cap,
            canonical=sort,
            derived_passes=derived_passes,
            leaf_passes=leaf_passes,
            attempts=attempts,
            ids=id_strategy(ascii_only=ascii_ids),
            none_passes=passed is False,
            some_passes=passed is True,
        )
    )


def _passes(
    draw: st.DrawFn,
    children: list[Node],
    derived_passes: bool,
    leaf_passes: st.SearchStrategy[bool] | None,
    own_passes: st.SearchStrategy[bool],
) -> bool:
    """A node's `passes`: all of its children's when derived, else drawn (a leaf's from
    `leaf_passes` when given)."""
    if children and derived_passes:
        return all(child.passes for child in children)
    return draw(leaf_passes if leaf_passes is not None and not children else own_passes)


@st.composite
def _trees(
    draw: st.DrawFn,
    *,
    max_nodes: int,
    max_depth: int,
    max_width: int,
    max_attempts_cap: int,
    canonical: bool,
    derived_passes: bool,
    leaf_passes: st.SearchStrategy[bool] | None,
    attempts: st.SearchStrategy[int] | None,
    ids: st.SearchStrategy[str],
    none_passes: bool,
    some_passes: bool,
) -> Node:
    used: set[str] = set()
    # A size budget drawn first gives small trees as well as ones that fill `max_nodes`.
    remaining = draw(st.just(max_nodes) | st.integers(1, max_nodes))
    own_passes = st.just(False) if none_passes else st.booleans()

    def fresh_id() -> str:
        candidate = draw(ids)
        while candidate in used:
            candidate = f"{candidate}~{len(used)}"
        used.add(candidate)
        return candidate

    def build(depth: int) -> Node:
        nonlocal remaining
        remaining -= 1
        node_id = fresh_id()
        children: list[Node] = []
        width = draw(st.integers(0, max_width)) if depth < max_depth else 0  # the root is 1
        for _ in range(width):
            if remaining <= 0:
                break
            children.append(build(depth + 1))
        if canonical:
            children.sort(key=lambda child: (child.order, child.id))
        max_attempts = draw(st.integers(1, max_attempts_cap))
        passes = _passes(draw, children, derived_passes, leaf_passes, own_passes)
        spent = draw(st.integers(0, max_attempts) if attempts is None else attempts)
        return Node(
            id=node_id,
            order=draw(orders),
            title=draw(texts),
            goal=draw(texts),
            acceptance=tuple(draw(st.lists(texts, max_size=3))),
            next=draw(st.sampled_from(NodeNext)),
            passes=passes,
            attempts=min(spent, max_attempts),
            max_attempts=max_attempts,
            children=tuple(children),
        )

    tree = build(1)
    if some_passes and not passed_ids(tree):
        tree = _with_a_passed_leaf(tree, draw(st.integers(0, max_nodes)), derived_passes)
    return tree


def _with_a_passed_leaf(tree: Node, pick: int, derived_passes: bool) -> Node:
    """The tree with its `pick`-th leaf (modulo the leaf count) passed; with
    `derived_passes`, its ancestors' passes derived again."""
    leaves = [node.id for node, _ in preorder(tree) if not node.children]
    chosen = leaves[pick % len(leaves)]

    def rebuilt(node: Node) -> Node:
        children = tuple(rebuilt(child) for child in node.children)
        if node.id == chosen:
            passes = True
        elif children and derived_passes:
            passes = all(child.passes for child in children)
        else:
            passes = node.passes
        return attrs.evolve(node, passes=passes, children=children)

    return rebuilt(tree)


def tree_jsons(**options: Any) -> st.SearchStrategy[JsonNode]:
    """The JSON data of `trees(**options)`, as tree.json holds it (siblings as stored)."""
    return trees(**options).map(tree_to_json)


def canonical_texts(**options: Any) -> st.SearchStrategy[str]:
    """The canonical tree.json text of `trees(**options)`: what the runner writes."""
    return trees(**options).map(dumps_tree)


def preorder(tree: Node) -> list[tuple[Node, Node | None]]:
    """Every `(node, parent)` of a tree, parents first, siblings as stored."""
    found: list[tuple[Node, Node | None]] = []
    stack: list[tuple[Node, Node | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        found.append((node, parent))
        stack.extend((child, node) for child in reversed(node.children))
    return found


def passed_ids(tree: Node) -> frozenset[str]:
    """The ids of every node that passed: the nodes the runner protects."""
    return frozenset(node.id for node, _ in preorder(tree) if node.passes)
