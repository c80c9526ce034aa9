"""Properties of review_tree_change: its findings are exactly the layers' own errors."""

from __future__ import annotations

import hashlib
import typing

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.iteration.plan import review_execution
from runner_core.testing import EditedTree, agent_edits, trees
from runner_core.testing.trees import preorder
from runner_core.tree.model import AgentStatusValue, Node, sort_children
from runner_core.tree.serialization import dumps_tree
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.review import review_tree_change
from runner_core.validation.status import status_findings

cases = trees(max_nodes=12).flatmap(
    lambda tree: st.tuples(
        st.just(tree),
        agent_edits(tree, kind="any"),
        st.sampled_from([node.id for node, _ in preorder(tree)]),
        st.sampled_from(typing.get_args(AgentStatusValue)),
    )
)


@settings(max_examples=100, deadline=None)
@given(cases)
def test_the_review_holds_each_layers_errors_in_its_order(
    case: tuple[Node, EditedTree, str, AgentStatusValue],
) -> None:
    """For any agent edit, the messages of each layer's findings are what that layer's own
    validator returns, in its order; nothing else is found."""
    prev, edit, selected, status = case
    after = sort_children(edit.tree)  # what the canonical text holds
    review = review_tree_change(prev, dumps_tree(edit.tree), selected, status)
    decomposing = selected if status == "decomposed" else None
    expected = {
        "invariants": messages(invariant_findings(after)),
        "immutability": messages(passed_node_findings(prev, after)),
        "status": messages(status_findings(prev, after, selected, status)),
        "child_additions": messages(child_findings(prev, after, decomposing)),
    }
    by_layer = {
        layer: tuple(dict.fromkeys(f.message for f in review.findings if f.layer == layer))
        for layer in expected
    }
    assert by_layer == expected
    assert {f.layer for f in review.findings} <= set(expected)
    assert review.tree == after


untouched = trees(max_nodes=12).flatmap(
    lambda tree: st.tuples(
        st.just(tree),
        st.sampled_from([node.id for node, _ in preorder(tree)]),
        st.sampled_from(["done", "retry"]),
    )
)


@settings(max_examples=100, deadline=None)
@given(untouched)
def test_a_tree_left_byte_for_byte_is_reviewed_as_if_it_were_parsed_again(
    case: tuple[Node, str, str],
) -> None:
    """Knowing the bytes the tree was read from skips parsing an untouched tree.json, never
    changing the verdict: the same status, error and tree as the full review."""
    prev, selected, status = case
    text = dumps_tree(prev)
    output = {"status": status, "summary": "s"}
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()

    full = review_execution(prev, selected, output, text)
    known = review_execution(prev, selected, output, text, prev_sha256=digest)

    assert (known.status, known.agent_error, known.tree) == (
        full.status,
        full.agent_error,
        full.tree,
    )
