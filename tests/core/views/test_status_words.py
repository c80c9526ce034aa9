"""One word per kind of iteration end, in every view: `retry` only for an
agent's own retry; a runner error is `runner_error`, `interrupted`, `rate_limited` or `conflict`
with its reason; `report`'s success rate is over agent attempts, runner errors counted apart."""

from __future__ import annotations

from runner_core.history.records import ErrorKind, ExecutionHistory
from runner_core.iteration.plan import shown_status
from runner_core.json_form import json_form
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.history import record_status, render_history
from runner_core.views.report import RunFigures, build_report, render_report
from runner_core.views.status import render_status, status_to_json, status_view
from tests.core.views.test_reports_core import assert_valid
from tests.helpers.records import record
from tests.helpers.trees import tree

RETRY, SKIPPED = AgentStatus.RETRY, GuardOutcome.SKIPPED
RUNNER = ErrorKind.RUNNER
RECORDS = (
    record(1, "root.1"),
    record(2, "root.2", AgentStatus.DONE, GuardOutcome.FAIL),
    record(3, "root.3", RETRY, SKIPPED, error_kind=ErrorKind.AGENT, error="tree invalid"),
    record(4, "root.4", RETRY, SKIPPED, error_kind=RUNNER, error="agent process exited 1"),
    record(5, "root.4", RETRY, SKIPPED, error_kind=RUNNER, error="interrupted by SIGINT"),
    record(6, "root.4", RETRY, SKIPPED, error_kind=RUNNER, error="rate_limited: slow down"),
    record(
        7, "root.5", RETRY, SKIPPED, error_kind=RUNNER, error="a.js: conflict", merge_rerun=True
    ),
)
WORDS = ["done", "done", "retry", "runner_error", "interrupted", "rate_limited", "conflict"]


def test_each_kind_of_iteration_end_has_its_word() -> None:
    assert [record_status(r) for r in RECORDS] == WORDS
    assert shown_status("retry", "runner", "interrupted by SIGTERM") == "interrupted"
    assert shown_status("retry", "agent", "interrupted by the agent's own hand") == "retry"


def test_history_shows_the_word_and_the_reason_beside_it() -> None:
    lines = render_history("run-1", RECORDS, None)
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["4"].split()[3] == "runner_error" and "agent process exited 1" in rows["4"]
    assert rows["7"].split()[3] == "conflict" and "conflict" in rows["7"]
    assert rows["3"].split()[3] == "retry"  # the agent's own error: its retry


def test_reports_success_rate_is_over_agent_attempts_with_runner_errors_apart() -> None:
    figures = RunFigures("run-1", ExecutionHistory(RECORDS), None, 8, 100)
    report = build_report(figures)

    # 3 agent attempts (1, 2, 3), one of them a success; 4 runner errors apart.
    assert (report.attempts.attempts, report.attempts.successful) == (3, 1)
    lines = render_report(report)
    rate = next(line for line in lines if "success_rate" in line)
    assert rate.split(None, 1)[1] == (
        "33.3% of 3 agent attempts (conflict=1 interrupted=1 rate_limited=1 runner_error=1 apart)"
    )
    document = json_form(report)
    assert document["attempts"] == {
        "agent_attempts": 3,
        "successful": 1,
        "success_rate": 1 / 3,
        "runner_errors": {"conflict": 1, "interrupted": 1, "rate_limited": 1, "runner_error": 1},
    }
    assert_valid(document, "report")


def test_status_names_the_last_iteration_by_its_word() -> None:
    state = RunState(run_id="run-1", next_iter=8, last_status=RETRY, last_guard=SKIPPED)
    view = status_view(tree("root"), state, 100, ExecutionHistory(RECORDS))

    assert "status: last status=conflict guard=skipped" in render_status(view)
    document = status_to_json(view)
    assert (document["last"]["status"], document["last_shown_status"]) == ("retry", "conflict")
    assert_valid(document, "status")
