"""What `runner diff ITER` shows: what an iteration did to the tree, node by node.

Decides the `runner diff --json` document (`runner serve` sends it too) and its lines, from the
tree diff and where the trees were read. Never reads a file or git.
"""

from __future__ import annotations

from typing import Any

from runner_core.tree.diff import TreeDiff, change_lines, tree_diff_to_json


def diff_lines(run_id: str, iteration: int, diff: TreeDiff, source: str) -> list[str]:
    head = f"diff: run={run_id} iter={iteration} changes={len(diff.changes)} source={source}"
    return [head, *(f"  {line}" for line in change_lines(diff))]


def diff_document(run_id: str, iteration: int, diff: TreeDiff, source: str) -> dict[str, Any]:
    """The `runner diff --json` document (views/diff.schema.json); `runner serve` sends it too."""
    return {"run_id": run_id, "iter": iteration, "source": source, **tree_diff_to_json(diff)}
