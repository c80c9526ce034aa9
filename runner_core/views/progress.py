"""What `runner loop` shows on a terminal before each step: `[iter 3/100] node root.2 ·
2/5 leaves passed · 00:12 elapsed`.

Decides the words of that live line; never draws it nor reads the clock: the shell hands in
the elapsed time (runner_shell.loop.command draws it).
"""

from __future__ import annotations

from runner_core.tree.model import Node
from runner_core.tree.selection import SelectionStatus, select_leaf
from runner_core.views.status import leaf_counts


def elapsed_text(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` from one hour on."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def progress_line(
    iteration: int, max_iterations: int, tree: Node, elapsed_seconds: float
) -> str | None:
    """The line `runner loop` shows on a terminal before a step; None when nothing will run."""
    selection = select_leaf(tree)
    if (
        iteration > max_iterations
        or selection.status is not SelectionStatus.OPEN
        or selection.node is None
    ):
        return None
    passed, total = leaf_counts(tree)
    return (
        f"[iter {iteration}/{max_iterations}] node {selection.node.id} · "
        f"{passed}/{total} leaves passed · {elapsed_text(elapsed_seconds)} elapsed"
    )
