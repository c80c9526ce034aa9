"""The pictures' data: tests per iteration, spend over time, the slots' timeline, the tree's
progress, the reason shown in an error column and elapsed / relative times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from runner_core.guard.ratchet import TestFigures
from runner_core.history.execution import ErrorKind, TokenUsage
from runner_core.history.records import ExecutionHistory
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.charts import (
    Progress,
    SpendPoint,
    TestsPoint,
    ago_text,
    duration_text,
    meta_reason,
    record_reason,
    slot_timeline,
    spend_series,
    tree_progress,
)
from runner_core.views.charts import (
    tests_series as passing_series,
)
from runner_core.views.web import node_detail
from tests.helpers.records import record
from tests.helpers.trees import tree

NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
NO_JOBS: dict[str, Any] = {"running": None, "jobs": []}


def _at(secs: int) -> str:
    return f"2026-01-01T00:00:{secs:02d}Z"


def _figures(passed: int, total: int, reasons: tuple[str, ...] = ()) -> TestFigures:
    return TestFigures(passed, total - passed, 0, total, passed, 0, 0, reasons=reasons)


def _ran(iteration: int, node_id: str, start: int, end: int, **changes: Any) -> Any:
    return record(iteration, node_id, started_at=_at(start), ended_at=_at(end), **changes)


def test_tests_series_takes_the_iterations_whose_guard_wrote_a_report_in_order() -> None:
    history = ExecutionHistory(
        (
            _ran(1, "a", 0, 2, tests=_figures(2, 5)),
            _ran(2, "b", 1, 3, tests=_figures(3, 5)),
            _ran(3, "c", 2, 4, status=AgentStatus.RETRY, guard=GuardOutcome.SKIPPED),
        )
    )
    assert passing_series(history) == (TestsPoint(1, 2, 3, 5), TestsPoint(2, 3, 2, 5))


def test_spend_is_cumulative_by_each_end_and_cost_stays_none_until_one_is_reported() -> None:
    usage = TokenUsage(100, 20, 5)
    history = ExecutionHistory(
        (
            _ran(1, "a", 0, 4, tokens=usage),
            _ran(2, "b", 1, 2, tokens=usage, cost_usd=0.5),
            _ran(3, "c", 5, 9),
        )
    )
    assert spend_series(history) == (
        SpendPoint(2, 2.0, 120, 0.5),
        SpendPoint(1, 4.0, 240, 0.5),
        SpendPoint(3, 9.0, 240, 0.5),
    )
    assert spend_series(ExecutionHistory(())) == ()


def test_the_timeline_lays_jobs_in_at_most_slots_lanes_and_cuts_a_merge_wait() -> None:
    """n3 starts while n1 and n2 still wait to merge (their meta.json ends at the merge): with
    two slots it takes the lane that frees first, whose bar then ends where n3 begins."""
    history = ExecutionHistory(
        (_ran(1, "n1", 0, 5), _ran(2, "n2", 0, 6), _ran(3, "n3", 3, 8, status=AgentStatus.RETRY,
                                                     guard=GuardOutcome.SKIPPED))
    )  # fmt: skip
    timeline = slot_timeline(history, NO_JOBS, NOW, slots=2)
    assert timeline.lanes == ("slot 1", "slot 2")
    lanes = {bar.node_id: (bar.lane, bar.start, bar.end, bar.outcome) for bar in timeline.bars}
    assert lanes == {
        "n1": (0, 0.0, 3.0, "passed"),
        "n2": (1, 0.0, 6.0, "passed"),
        "n3": (0, 3.0, 8.0, "retry"),
    }
    assert timeline.span == 8.0 and timeline.origin == _at(0)


def test_running_jobs_are_bars_to_now_and_a_remote_job_is_in_its_worker_s_lane() -> None:
    history = ExecutionHistory((_ran(1, "a", 0, 10),))
    status = {
        "running": None,
        "jobs": [
            {"iteration": 2, "node_id": "b", "role": "executor", "started_at": _at(30),
             "worker": "w-east"},
            {"iteration": 3, "node_id": "c", "role": "executor", "started_at": _at(40),
             "worker": None},
        ],
    }  # fmt: skip
    timeline = slot_timeline(history, status, NOW, slots=2)
    assert timeline.lanes == ("slot 1", "worker w-east")
    bars = {bar.node_id: (bar.lane, bar.end, bar.outcome) for bar in timeline.bars}
    assert bars == {"a": (0, 10.0, "passed"), "b": (1, 60.0, "running"), "c": (0, 60.0, "running")}


def test_tree_progress_counts_leaves_by_where_they_stand() -> None:
    def row(state: str, passes: bool = False, is_leaf: bool = True) -> dict[str, Any]:
        return {"leaf": is_leaf, "passes": passes, "state": state}

    rows = [
        row("completed", True, is_leaf=False),
        row("completed", True),
        row("running"),
        row("stuck"),
        row("failed"),
        row("skipped"),
        row("pending"),
    ]
    progress = tree_progress(rows)
    assert progress == Progress(passed=1, running=1, stuck=2, skipped=1, open=1)
    assert progress.total == 6


def test_the_error_column_says_the_ratchet_s_reasons_when_no_error_failed_the_iteration() -> None:
    reasons = ("target test 't::a' failed", "test 't::b' regressed")
    judged = record(1, "root.1", guard=GuardOutcome.FAIL, tests=_figures(1, 3, reasons))
    errored = record(2, "root.1", error_kind=ErrorKind.AGENT, error="exit 3")
    assert record_reason(judged) == "target test 't::a' failed (and 1 more)"
    assert record_reason(errored) == "agent: exit 3"
    assert record_reason(record(3)) is None
    assert meta_reason(
        {"error_kind": None, "error": None, "tests": {"reasons": list(reasons)}}
    ) == ("target test 't::a' failed (and 1 more)")
    detail = node_detail(tree("root", tree("root.1")), ExecutionHistory((judged,)), "root.1")
    assert detail is not None
    assert detail["executions"][0]["error"] == "target test 't::a' failed (and 1 more)"


def test_times_read_as_the_cli_says_them() -> None:
    assert [duration_text(s) for s in (6.9, 65, 7380)] == ["6s", "1m 05s", "2h 03m"]
    assert ago_text(_at(48), NOW) == "12s ago"
    assert ago_text("2026-01-01T00:01:05Z", NOW) == "in 5s"
