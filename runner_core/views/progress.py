"""What `runner loop` shows on a terminal while it steps: `[iter 3/100] node root.2 ·
2/5 leaves passed · 00:12 elapsed`, its head read before each step and its elapsed time ticking.

Decides the words of that live line; never draws it nor reads the clock: the shell hands in
the elapsed time (runner_shell.loop.command draws it, once a second).
"""

from __future__ import annotations

from runner_core.tree.model import Node
from runner_core.tree.selection import SelectionStatus, leaf_counts, select_leaf


def elapsed_text(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` from one hour on."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def progress_head(iteration: int, max_iterations: int, tree: Node) -> str | None:
    """What the live line says of the step about to run (read once per step, however often
    the line ticks); None when nothing will run."""
    selection = select_leaf(tree)
    if iteration > max_iterations or selection.status is not SelectionStatus.OPEN:
        return None
    passed, total = leaf_counts(tree)
    return (
        f"[iter {iteration}/{max_iterations}] node {selection.node.id} · "
        f"{passed}/{total} leaves passed"
    )


def ticking_line(head: str, elapsed_seconds: float) -> str:
    """The live line at one tick: its head and the loop's elapsed time."""
    return f"{head} · {elapsed_text(elapsed_seconds)} elapsed"


def progress_line(
    iteration: int, max_iterations: int, tree: Node, elapsed_seconds: float
) -> str | None:
    """The line `runner loop` shows on a terminal before a step; None when nothing will run."""
    head = progress_head(iteration, max_iterations, tree)
    return None if head is None else ticking_line(head, elapsed_seconds)
