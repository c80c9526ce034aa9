"""What `runner diff ITER` shows: what an iteration did to the tree, node by node.

Decides the `runner diff --json` document (`runner serve` sends it too) and its lines, from the
tree diff and where the trees were read. Never reads a file or git.
"""

from __future__ import annotations

import attrs

from runner_core.json_form import shaped
from runner_core.tree.diff import TreeDiff, change_lines


def diff_lines(run_id: str, iteration: int, diff: TreeDiff, source: str) -> list[str]:
    head = f"diff: run={run_id} iter={iteration} changes={len(diff.changes)} source={source}"
    return [head, *(f"  {line}" for line in change_lines(diff))]


@attrs.frozen(slots=True)
class DiffDocument:
    """The `runner diff --json` document (schemas/views/diff.schema.json); `runner serve` sends
    it too."""

    run_id: str
    iteration: int = attrs.field(metadata=shaped(key="iter"))
    source: str
    diff: TreeDiff = attrs.field(metadata=shaped(inline=True))
