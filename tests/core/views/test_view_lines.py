"""The terminal lines of the read-only views, drawn from facts alone: no repository, no files.

The end-to-end tests pin these lines through the CLI; here each renderer is a pure function of
the core's view models (runner_core.views.layout, status, history, show, report, diff).
"""

from __future__ import annotations

import pytest

from runner_core.history.records import ExecutionHistory, TokenUsage
from runner_core.run.state import RunState
from runner_core.tree.diff import tree_diff
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.diff import diff_lines
from runner_core.views.history import render_history
from runner_core.views.layout import duration_text, table, tokens_text
from runner_core.views.report import RunFigures, build_report, render_report
from runner_core.views.show import (
    CommitFacet,
    FileFacts,
    IterationFiles,
    iterations_text,
    render_show,
)
from runner_core.views.status import render_status, status_view
from tests.helpers.records import record
from tests.helpers.trees import tree

TREE = tree("root", tree("root.1", passes=True, attempts=1), tree("root.2"), next="decompose")


@pytest.mark.parametrize(
    ("ms", "text"),
    [(999, "999ms"), (1000, "1.0s"), (59_999, "60.0s"), (60_000, "1m00s"), (3_600_000, "1h00m")],
)
def test_a_duration_is_written_in_the_largest_unit_that_fits(ms: int, text: str) -> None:
    assert duration_text(ms) == text


def test_tokens_are_input_output_cached_or_a_dash() -> None:
    assert tokens_text(TokenUsage(100, 10, 50)) == "100/10/50"
    assert tokens_text(None) == "-"


def test_a_table_aligns_its_columns_two_spaces_apart_without_trailing_blanks() -> None:
    assert table(("A", "LONGER"), [("xyz", "1"), ("q", "")], indent="  ") == [
        "  A    LONGER",
        "  xyz  1",
        "  q",
    ]


def test_iterations_on_disk_fold_into_ranges() -> None:
    assert iterations_text([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert iterations_text([]) == "none"


def test_status_lines_of_a_run_not_started() -> None:
    lines = render_status(status_view(TREE, RunState(), 10, ExecutionHistory()), tree=True)
    assert lines[:3] == [
        "status: run=not-started",
        "status: next_iter=1 max_iterations=10",
        "status: leaves passed=1 total=2",
    ]
    assert lines[lines.index("tree:") + 1].startswith("  root  ")


def test_history_lines_have_one_row_per_iteration_and_the_error_column() -> None:
    records = (record(1, "root.1"), record(2, "root.2", AgentStatus.RETRY, GuardOutcome.SKIPPED))
    lines = render_history("run-1", records, None)
    assert lines[0] == "history: run=run-1 iterations=2"
    assert lines[1].split() == [
        "ITER",
        "NODE",
        "ROLE",
        "STATUS",
        "GUARD",
        "DURATION",
        "TOKENS",
        "in/out/cached",
        "ERROR",
    ]
    assert lines[3].split() == ["2", "root.2", "executor", "retry", "skipped", "1.0s", "-", "-"]


def test_the_report_folds_repeated_nodes_in_the_execution_order() -> None:
    history = ExecutionHistory.of([record(1, "root.1"), record(2, "root.2"), record(3, "root.2")])
    figures = RunFigures("run-1", history, TREE, 4, 10)
    lines = render_report(build_report(figures))
    assert lines[:2] == ["report: run=run-1", "summary:"]
    assert "  execution_order        root.1, root.2 (x2)" in lines


def test_show_lines_of_an_iteration_known_only_by_its_trailers() -> None:
    shown = IterationFiles(
        "run-1", 3, "the commit trailers of abcd1234", record(3), None, None, "gone", ()
    )
    lines = [*render_show(shown), *CommitFacet(None, ()).lines()]
    assert lines[0] == "show: run=run-1 iter=3 dir=the commit trailers of abcd1234"
    assert "output: gone" in lines
    assert lines[-2:] == ["  NAME  BYTES", "commit: none found on the run's branch"]
    assert FileFacts("a.log", 3).head is None


def test_diff_lines_head_names_the_run_iteration_changes_and_source() -> None:
    lines = diff_lines("run-1", 2, tree_diff(TREE, TREE), "commit abcd1234")
    assert lines == ["diff: run=run-1 iter=2 changes=0 source=commit abcd1234"]
