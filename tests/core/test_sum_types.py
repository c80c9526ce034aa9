"""What the library answers is a sum type: a selection is an `OpenLeaf`, a `StuckLeaf` or a
`CompleteTree`, a review a `ReviewedTree` or an `UnreadableTree`, and a node or tree is a
field only of the variants that have one, so mypy refuses reading it before the case is known."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import ROOT

# Each use once narrowed (accepted) and once not (refused: the line ends with `# refused`).
SNIPPET = """
from runner_core import CompleteTree, Node, OpenLeaf, SelectionStatus, StuckLeaf, select_leaf
from runner_core.tree.selection import Selection


def by_status(tree: Node) -> str:
    selection = select_leaf(tree)
    if selection.status is SelectionStatus.COMPLETE:
        return ""
    return selection.node.id + selection.path


def by_match(selection: Selection) -> str:
    match selection:
        case OpenLeaf(node, path) | StuckLeaf(node, path):
            return node.id + path
        case CompleteTree():
            return ""


def open_only(tree: Node) -> str:
    selection = select_leaf(tree)
    if selection.status is SelectionStatus.OPEN:
        return selection.node.id
    return selection.path  # refused


def not_narrowed(tree: Node) -> str:
    return select_leaf(tree).node.id  # refused


def no_node(tree: Node) -> OpenLeaf:
    return OpenLeaf(None, None)  # refused
"""

REVIEW_SNIPPET = """
from runner_core import Node, ReviewedTree, UnreadableTree, review_tree_change
from runner_core.validation.review import TreeReview


def by_tree(prev: Node, text: str) -> Node:
    review = review_tree_change(prev, text, "a", "done")
    if review.tree is None:
        return prev
    return review.tree


def by_match(review: TreeReview) -> int:
    match review:
        case ReviewedTree(tree, findings):
            return len(tree.children) + len(findings)
        case UnreadableTree(findings):
            return len(findings)


def not_narrowed(prev: Node, text: str) -> Node:
    return review_tree_change(prev, text, "a", "done").tree  # refused


def no_tree() -> ReviewedTree:
    return ReviewedTree(None, ())  # refused
"""

CACHE = ("--cache-dir", str(ROOT / ".mypy_cache"))


def mypy_flags(snippet: str, tmp_path: Path) -> tuple[set[int], set[int], str]:
    """The lines mypy --strict flags in `snippet`, the lines marked refused, and mypy's output."""
    module = tmp_path / "uses.py"
    module.write_text(textwrap.dedent(snippet), encoding="utf-8")
    refused = {
        number for number, line in enumerate(snippet.splitlines(), 1) if line.endswith("# refused")
    }
    # In a process of its own, from the checkout, so that it reads runner_core's source.
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(module), *CACHE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    flagged = {
        int(line.split(":")[1]) for line in checked.stdout.splitlines() if ": error:" in line
    }
    return flagged, refused, checked.stdout + checked.stderr


def test_a_selections_node_is_read_only_where_its_variant_has_one(tmp_path: Path) -> None:
    flagged, refused, output = mypy_flags(SNIPPET, tmp_path)

    assert flagged == refused, output


def test_a_reviews_tree_is_read_only_where_its_variant_has_one(tmp_path: Path) -> None:
    flagged, refused, output = mypy_flags(REVIEW_SNIPPET, tmp_path)

    assert flagged == refused, output
