"""What parallelism cost in `runner report` (runner_core.views.report): each node's merge reruns
and the run's, in the text and in `--json`; a run without one reports exactly as before."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema

from runner_core.history.records import (
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    MergeReruns,
    TokenUsage,
    merge_reruns,
)
from runner_core.json_form import json_form
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.report import (
    RunFigures,
    build_report,
    merge_rerun_lines,
    render_report,
)
from tests.helpers.records import record
from tests.helpers.trees import tree

RETRY, SKIPPED = AgentStatus.RETRY, GuardOutcome.SKIPPED
TREE = tree("root", tree("root.2", order=1), tree("root.1", order=0, passes=True, attempts=1))


def rerun(iteration: int, node_id: str, **changes: Any) -> ExecutionRecord:
    """A job whose work met another's: a runner error, no attempt used, flagged."""
    return record(
        iteration,
        node_id,
        RETRY,
        SKIPPED,
        error_kind=ErrorKind.RUNNER,
        error="merge conflict",
        attempts_after=0,
        merge_rerun=True,
        **changes,
    )


HISTORY = ExecutionHistory.of(
    [
        record(1, "root.1", duration_ms=4000, tokens=TokenUsage(10, 1, 0), cost_usd=0.5),
        rerun(2, "root.2", duration_ms=2500, tokens=TokenUsage(7, 2, 1), cost_usd=0.25),
        rerun(3, "root.2", duration_ms=500, tokens=TokenUsage(3, 0, 0), cost_usd=0.125),
        rerun(4, "root.1", duration_ms=1200),
        record(5, "root.2", duration_ms=900),
    ]
)


def report_of(history: ExecutionHistory) -> RunFigures:
    return RunFigures(
        run_id="run-1", history=history, tree=TREE, next_iteration=6, max_iterations=100
    )


def assert_valid(document: dict[str, Any]) -> None:
    text = resources.files("runner_core.schemas").joinpath("views/report.schema.json")
    schema = json.loads(text.read_text(encoding="utf-8"))
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)


def test_merge_reruns_sum_only_the_flagged_records() -> None:
    assert merge_reruns(HISTORY.records) == MergeReruns(
        count=3, duration_ms=4200, tokens=TokenUsage(10, 2, 1), cost_usd=0.375
    )
    assert merge_reruns(HISTORY.records_for("root.1")) == MergeReruns(1, 1200, TokenUsage(), None)


def test_the_summary_and_each_node_carry_their_merge_reruns() -> None:
    assert HISTORY.summary().merge_reruns.count == 3
    report = build_report(report_of(HISTORY))
    assert [(row.stats.node_id, row.stats.merge_reruns.count) for row in report.nodes] == [
        ("root.1", 1),
        ("root.2", 2),
    ]


def test_report_json_names_each_node_s_reruns_in_the_nodes_order_and_the_run_total() -> None:
    document = json_form(build_report(report_of(HISTORY)))
    assert_valid(document)
    assert document["merge_reruns"] == {
        "count": 3,
        "duration_ms": 4200,
        "tokens": {"input": 10, "output": 2, "cached": 1},
        "cost_usd": 0.375,
        "nodes": [
            {
                "node_id": "root.1",
                "count": 1,
                "duration_ms": 1200,
                "tokens": {"input": 0, "output": 0, "cached": 0},
                "cost_usd": None,
            },
            {
                "node_id": "root.2",
                "count": 2,
                "duration_ms": 3000,
                "tokens": {"input": 10, "output": 2, "cached": 1},
                "cost_usd": 0.375,
            },
        ],
    }
    assert list(document).index("merge_reruns") == list(document).index("subtree_totals") + 1


def test_report_text_has_a_merge_reruns_table_after_the_nodes() -> None:
    lines = render_report(build_report(report_of(HISTORY)))
    start = lines.index("merge reruns:")
    assert lines[start : start + 5] == [
        "merge reruns:",
        "  NODE    RERUNS  DURATION  TOKENS in/out/cached  COST_USD",
        "  root.1  1       1.2s      0/0/0                 -",
        "  root.2  2       3.0s      10/2/1                0.3750",
        "  total: reruns=3 duration=4.2s tokens=10/2/1 cost_usd=0.3750",
    ]
    assert lines[start - 1].startswith("  root.2 ")  # the last row of the nodes table


def test_a_run_without_a_merge_rerun_shows_nothing_of_them() -> None:
    plain = ExecutionHistory.of(r for r in HISTORY.records if not r.merge_rerun)
    report = build_report(report_of(plain))
    assert merge_rerun_lines(report) == []
    assert "merge reruns:" not in render_report(report)
    document = json_form(report)
    assert "merge_reruns" not in document
    assert_valid(document)
