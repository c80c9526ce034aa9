"""The report's per-backend summaries (runner_core.views.report.backend_summaries): each
backend's iterations summarised as a history of those iterations alone."""

from __future__ import annotations

from runner_core.history.records import ExecutionHistory, summarize
from runner_core.views.report import backend_summaries
from tests.helpers.records import record


def test_a_run_with_one_backend_is_summarised_as_its_whole_history() -> None:
    history = ExecutionHistory.of(record(number, backend="claude") for number in range(1, 5))
    assert backend_summaries(history) == (("claude", summarize(history)),)


def test_each_backend_is_summarised_on_its_own_iterations_sorted_by_name() -> None:
    names = ("codex", "claude", "codex", "command", "claude")
    history = ExecutionHistory.of(
        record(number, node_id=f"root.{number}", backend=name)
        for number, name in enumerate(names, 1)
    )
    expected = tuple(
        (
            name,
            summarize(ExecutionHistory.of(r for r in history.records if r.backend == name)),
        )
        for name in ("claude", "codex", "command")
    )
    assert backend_summaries(history) == expected
