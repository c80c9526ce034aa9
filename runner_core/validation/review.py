"""One call that judges an agent's change to the tree with every layer, as values.

Decides nothing of its own: it runs the layers (JSON, schema, invariants, passed-node
immutability, status, child additions) on the change and gathers each one's findings, so a
tool sees every error at once, with its node, path and code, in the runner's own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar, Literal

import attrs

from runner_core.tree.model import AgentStatus, AgentStatusValue, Node, iter_preorder, path_of
from runner_core.tree.serialization import TreeValidationError, decode_tree_text
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import Finding
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.loading import parse_tree, tree_from_json
from runner_core.validation.schema import schema_findings
from runner_core.validation.status import status_findings


@attrs.frozen(slots=True)
class ReviewedTree:
    """What `review_tree_change` found when the agent's tree could be built: that `tree` and
    every finding, layer by layer in the runner's order, each layer's in its own sorted
    order."""

    tree: Node
    findings: tuple[Finding, ...]

    @property
    def accepted(self) -> bool:
        """Whether no layer found anything: the runner would go on with this tree."""
        return not self.findings


@attrs.frozen(slots=True)
class UnreadableTree:
    """What `review_tree_change` found when the agent's text is not JSON or not of the schema:
    no tree (`tree` is None) and the findings of the layers that read the text; never
    accepted."""

    findings: tuple[Finding, ...]
    tree: ClassVar[None] = None
    accepted: ClassVar[Literal[False]] = False


# What `review_tree_change` found, told apart by `tree` (None only when unreadable) or `match`.
TreeReview = ReviewedTree | UnreadableTree


def review_tree_change(
    prev: Node,
    next_tree: Node | str | bytes,
    selected_id: str,
    status: AgentStatus | AgentStatusValue,
) -> TreeReview:
    """Every error of the agent's change from `prev` to `next_tree` (a `Node`, or the text
    of tree.json as the agent left it) when it worked on `selected_id` and said `status`
    (an `AgentStatus` or its value; `decomposed` means it decomposed that node, so only that
    node may gain children).

    A `ReviewedTree` when the tree could be built, an `UnreadableTree` when its text is not
    JSON or not of the schema. Layers that need a built tree run only when the text is JSON of
    the schema; all the others run even when an earlier one failed, so every error is found at
    once. Raises
    `ValueError` only when `status` is no `AgentStatus` value.
    """
    status = AgentStatus(status)
    found: list[Finding] = []
    if isinstance(next_tree, Node):
        tree = next_tree
    else:
        read, found = _read(next_tree)
        if read is None:
            return UnreadableTree(tuple(found))
        tree = read
    decomposing = selected_id if status is AgentStatus.DECOMPOSED else None
    located = _located(
        (*passed_node_findings(prev, tree), *status_findings(prev, tree, selected_id, status)),
        (tree, prev),
    )
    found += [*invariant_findings(tree), *located, *child_findings(prev, tree, decomposing)]
    return ReviewedTree(tree, tuple(found))


def _read(text: str | bytes) -> tuple[Node | None, list[Finding]]:
    """The tree of `text` and the findings of the layers that read it."""
    try:
        return parse_tree(text), []
    except TreeValidationError as error:
        if error.layer == "json":
            return None, [Finding("json", None, None, "not_json", line) for line in error.errors]
    obj = decode_tree_text(text)
    schema = schema_findings(obj)
    if schema:
        return None, list(schema)
    return tree_from_json(obj), []


def _located(findings: Iterable[Finding], trees: tuple[Node, Node]) -> list[Finding]:
    """`findings` with the path of their node: where it is in the first tree holding it."""
    found = list(findings)
    if not found:
        return found
    paths: dict[str, str] = {}
    for tree in reversed(trees):
        paths.update(_paths(tree))
    return [
        attrs.evolve(finding, path=paths.get(finding.node_id or ""))
        if finding.path is None
        else finding
        for finding in found
    ]


def _paths(tree: Node) -> Mapping[str, str]:
    """Each id's path; the first occurrence in pre-order wins."""
    paths: dict[str, str] = {}
    for node, ancestors in iter_preorder(tree):
        paths.setdefault(node.id, path_of(ancestors, node.id))
    return paths
