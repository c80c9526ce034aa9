"""`runner status` without `--tree`: the tree in a bounded number of lines (counts per display
state, then the selected, running and stuck nodes), whatever the tree's size."""

from __future__ import annotations

from runner_core.history.records import ExecutionHistory
from runner_core.run.state import RunState
from runner_core.views.status import (
    SUMMARY_NODE_LINES,
    render_status,
    status_view,
    tree_summary_lines,
)
from tests.helpers.trees import tree

STATES = "pending={} running=0 completed={} failed=0 stuck={} skipped=0"


def test_a_big_tree_is_summarized_in_a_bounded_number_of_lines() -> None:
    # 1,000 leaves: 300 passed, 50 stuck (attempts used up), the rest open.
    leaves = [
        tree(f"n{i:04}", passes=True, attempts=1)
        if i < 300
        else tree(f"n{i:04}", attempts=3, max_attempts=3)
        if i < 350
        else tree(f"n{i:04}")
        for i in range(1000)
    ]
    view = status_view(tree("root", *leaves), RunState(), 10, ExecutionHistory())
    summary = tree_summary_lines(view)
    assert len(summary) == 1 + SUMMARY_NODE_LINES + 1
    head = summary[0]
    assert head.startswith("tree: nodes=1001 ")
    counts = dict(word.split("=") for word in head.split()[2:8])
    assert sum(map(int, counts.values())) == 1001
    # The root is stuck with its 50 stuck leaves; the first of them is the selected one.
    assert counts["completed"] == "300" and counts["stuck"] == "51"
    assert view.selected is not None and view.selected.id == "n0300"
    shown = [line.split()[0] for line in summary[1:-1]]
    assert shown == ["root", *(f"n{i:04}" for i in range(300, 319))]
    assert summary[-1] == "  ... 31 more selected, running or stuck nodes (runner status --tree)"
    lines = render_status(view)
    assert len(lines) < 2 * SUMMARY_NODE_LINES + 10
    stuck = [line for line in lines if line.startswith("status: stuck")]
    assert len(stuck) == SUMMARY_NODE_LINES + 1
    assert stuck[-1] == "status: stuck +30 more (runner status --tree)"
    assert len(render_status(view, tree=True)) > 1001


def test_the_selected_leaf_is_shown_with_its_row() -> None:
    view = status_view(
        tree("root", tree("a", passes=True, attempts=1), tree("b")),
        RunState(),
        10,
        ExecutionHistory(),
    )
    assert tree_summary_lines(view) == [
        "tree: nodes=3 " + STATES.format(2, 1, 0) + " (every node: runner status --tree)",
        "  b  pending  attempts=0/3  title of b",
    ]
