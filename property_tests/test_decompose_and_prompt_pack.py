"""Execution-free properties of decomposition and of the prompt pack."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core import ChildSpec, Node, NodeNext, decompose_node, tree_from_json, tree_to_json
from runner_core.prompt.pack import build_prompt_pack
from runner_core.testing import trees
from runner_core.testing.edits import index_json
from runner_core.testing.trees import preorder, texts
from runner_core.tree.model import sort_children
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings

# ---------------------------------------------------------------- decomposition

child_specs = st.builds(
    ChildSpec,
    title=texts,
    goal=texts,
    acceptance=st.lists(texts, max_size=3).map(tuple),
    next=st.sampled_from(NodeNext),
)


@st.composite
def decompositions(draw: st.DrawFn) -> tuple[Node, str, tuple[ChildSpec, ...], int]:
    """A tree, the node to decompose, child specs and max_attempts_default.

    Some other nodes are renamed `<selected>.<k>` so the lowest free n is not always 1.
    """
    root = tree_to_json(draw(trees(max_nodes=12, canonical=False)))
    index = index_json(root)
    selected = draw(st.sampled_from(sorted(index)))
    others = [node_id for node_id in sorted(index) if node_id != selected]
    for k in draw(st.lists(st.integers(1, 6), unique=True, max_size=len(others))):
        victim = others.pop(draw(st.integers(0, len(others) - 1)))
        if f"{selected}.{k}" not in index:
            index[victim][0]["id"] = f"{selected}.{k}"
    specs = tuple(draw(st.lists(child_specs, min_size=1, max_size=5)))
    return tree_from_json(root), selected, specs, draw(st.integers(1, 5))


def without_ids(tree: Node, dropped: set[str]) -> Node:
    """The tree with every node whose id is in `dropped` left out (with its subtree)."""
    kept = tuple(without_ids(child, dropped) for child in tree.children if child.id not in dropped)
    return Node(
        tree.id,
        tree.order,
        tree.title,
        tree.goal,
        tree.acceptance,
        tree.next,
        tree.passes,
        tree.attempts,
        tree.max_attempts,
        kept,
    )


@given(decompositions())
def test_decompose_adds_numbered_children_and_changes_nothing_else(
    case: tuple[Node, str, tuple[ChildSpec, ...], int],
) -> None:
    """decompose_node appends one child per spec, in spec order, under the selected node:
    ids `<parent>.<n>` for the lowest n not already taken anywhere in the tree (so new ids are
    unique), order = index, the spec's texts, passes false, attempts 0 and max_attempts the
    default. The rest of the tree, and the input, are unchanged."""
    tree, selected, specs, default = case
    before = tree_to_json(tree)
    result = decompose_node(tree, selected, specs, default)
    assert tree_to_json(tree) == before

    taken = {node.id for node, _ in preorder(tree)}
    free = (n for n in range(1, len(taken) + len(specs) + 2) if f"{selected}.{n}" not in taken)
    expected_ids = [f"{selected}.{next(free)}" for _ in specs]

    parent = next(node for node, _ in preorder(result) if node.id == selected)
    added = parent.children[len(parent.children) - len(specs) :]
    assert [child.id for child in added] == expected_ids
    for index, (child, spec) in enumerate(zip(added, specs, strict=True)):
        assert child.order == index
        assert (child.title, child.goal, child.acceptance, child.next) == (
            spec.title,
            spec.goal,
            spec.acceptance,
            spec.next,
        )
        assert (child.passes, child.attempts, child.max_attempts) == (False, 0, default)
        assert child.children == ()

    all_ids = [node.id for node, _ in preorder(result)]
    assert len(all_ids) == len(set(all_ids)) == len(taken) + len(specs)
    assert without_ids(result, set(expected_ids)) == tree
    assert messages(invariant_findings(sort_children(result))) == ()


# ---------------------------------------------------------------- prompt pack

SPEC_ORDER = (
    "contract",
    "goal",
    "history",
    "failure",
    "selected",
    "tree",
    "assumptions",
    "questions",
    "output",
)
REQUIRED = ("contract", "goal", "selected", "output")
DROP_ORDER = ("tree", "assumptions", "questions", "history", "failure")
MARK = "[truncated]"

# Section bodies: any text (multi-byte and whitespace included) but `<`, which only the
# `<<name>>` markers use, and often with trailing whitespace, as files end with a newline.
bodies = st.tuples(
    st.text(st.characters(codec="utf-8", exclude_characters="<"), max_size=300),
    st.sampled_from(("", "\n", "\n\n", " \t\n")),
).map("".join)


@st.composite
def prompt_sections(draw: st.DrawFn) -> dict[str, str | None]:
    """Every required section (non-blank, starting `<<name>>`), some optional ones, some of
    those blank or None."""
    sections: dict[str, str | None] = {}
    for name in SPEC_ORDER:
        if name in REQUIRED:
            sections[name] = f"<<{name}>>" + draw(bodies)
        else:
            choice = draw(st.sampled_from(("absent", "none", "blank", "text", "text")))
            if choice == "none":
                sections[name] = None
            elif choice == "blank":
                sections[name] = draw(st.sampled_from(("", " ", "\n\n")))
            elif choice == "text":
                sections[name] = f"<<{name}>>" + draw(bodies)
    return sections


def size_of(sections: dict[str, str | None]) -> int:
    """Bytes of the pack of `sections` when nothing has to go."""
    return build_prompt_pack(sections, 10**9).size_bytes


def required_only(sections: dict[str, str | None]) -> dict[str, str | None]:
    return {name: sections[name] for name in REQUIRED}


def smallest_possible(sections: dict[str, str | None]) -> dict[str, str | None]:
    """Contract and output contract whole, goal and selected node cut down to the mark."""
    return {**required_only(sections), "goal": "\n" + MARK, "selected": "\n" + MARK}


@given(prompt_sections(), st.data())
def test_pack_fits_the_budget_whenever_the_required_sections_do(
    sections: dict[str, str | None], data: st.DataObject
) -> None:
    """If the required sections fit the budget whole, the pack fits it, keeps every required
    section whole and truncates nothing."""
    budget = data.draw(st.integers(size_of(required_only(sections)), size_of(sections) + 10))
    pack = build_prompt_pack(sections, budget)
    assert pack.size_bytes <= budget
    assert pack.truncated == ()
    for name in REQUIRED:
        assert (sections[name] or "").rstrip() in pack.text


@given(prompt_sections(), st.data())
def test_truncated_pack_fits_the_budget(
    sections: dict[str, str | None], data: st.DataObject
) -> None:
    """If the runner's contract and output contract fit with the goal and selected node cut
    to the `[truncated]` mark, the pack fits the budget, byte for byte, and every cut section
    ends with the mark."""
    low = size_of(smallest_possible(sections))
    budget = data.draw(st.integers(low, max(low, size_of(required_only(sections)))))
    pack = build_prompt_pack(sections, budget)
    assert pack.size_bytes <= budget
    assert set(pack.truncated) <= {"goal", "selected"}
    assert pack.text.count(MARK) >= len(pack.truncated)


@given(prompt_sections(), st.data())
def test_sections_appear_in_spec_order_and_drop_in_drop_order(
    sections: dict[str, str | None], data: st.DataObject
) -> None:
    """Included sections appear in the prompt pack's order; required ones are never dropped; dropped
    sections are the first present ones of the drop order (tree, assumptions, questions,
    history, failure); truncation happens only after every droppable section is gone."""
    budget = data.draw(st.integers(0, size_of(sections) + 10))
    pack = build_prompt_pack(sections, budget)
    assert list(pack.included) == [name for name in SPEC_ORDER if name in pack.included]
    assert set(REQUIRED) <= set(pack.included)
    positions = [pack.text.find(f"<<{name}>>") for name in pack.included]
    found = [position for position in positions if position >= 0]
    assert found == sorted(found)
    present = [name for name in DROP_ORDER if (sections.get(name) or "").strip()]
    assert list(pack.dropped) == present[: len(pack.dropped)]
    assert not set(pack.dropped) & set(pack.included)
    if pack.truncated:
        assert list(pack.dropped) == present


@given(prompt_sections())
def test_a_pack_within_budget_is_left_whole(sections: dict[str, str | None]) -> None:
    """A pack that fits its budget loses nothing: same text as with an unlimited budget."""
    whole = build_prompt_pack(sections, 10**9)
    pack = build_prompt_pack(sections, whole.size_bytes)
    assert pack == whole
    assert pack.dropped == pack.truncated == ()
