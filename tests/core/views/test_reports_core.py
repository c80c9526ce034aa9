"""What the inspection commands say (runner_core.views): status, history, show, report, metrics.

Pure builders only: trees and histories go in, JSON documents and Prometheus text come out.
Every JSON document built here is also checked against the schema shipped for it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import attrs
import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runner_core.history.records import (
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    NodeDisplayState,
    TokenUsage,
    record_to_meta,
)
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.json_form import json_form
from runner_core.run.config import BudgetConfig
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, canonical_preorder
from runner_core.views.history import HistoryDocument, history_records
from runner_core.views.metrics import escape_label_value, metrics_text
from runner_core.views.progress import elapsed_text, progress_line
from runner_core.views.report import RunFigures, build_report
from runner_core.views.show import CommitFacet, FileFacts, IterationFiles, ShowDocument
from runner_core.views.status import status_to_json, status_view
from tests.helpers.records import record as shared_record
from tests.helpers.trees import tree

DONE, RETRY, DECOMPOSED = AgentStatus.DONE, AgentStatus.RETRY, AgentStatus.DECOMPOSED
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED
RUN = "run-1a2b3c4d"


def schema(name: str) -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath(f"views/{name}.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def assert_valid(document: dict[str, Any], name: str) -> None:
    jsonschema.validate(document, schema(name), cls=jsonschema.Draft202012Validator)


def record(iteration: int, node_id: str, *args: Any, **changes: Any) -> ExecutionRecord:
    return shared_record(iteration, node_id, *args, **{"run_id": RUN, **changes})


def journal(node_id: str, run_id: str = RUN, iteration: int = 6) -> Journal:
    return Journal(
        run_id=run_id,
        iteration=iteration,
        node_id=node_id,
        role="executor",
        phase=JournalPhase.RUNNING,
        started_at="2026-01-01T00:10:00.000Z",
        runner_pid=4242,
        command="runner loop",
    )


# root (decomposed) -> root.1 passed, root.2 failed once, root.3 untouched. Stored out of order.
TREE = tree(
    "root",
    tree("root.3", order=2, title="Third"),
    tree("root.1", order=0, passes=True, attempts=1, title="First"),
    tree("root.2", order=1, attempts=2, title="Second"),
    next="decompose",
)
HISTORY = ExecutionHistory.of(
    [
        record(1, "root", DECOMPOSED, SKIPPED, duration_ms=300),
        record(2, "root.1", DONE, FAIL, duration_ms=5000, tokens=TokenUsage(100, 10, 50)),
        record(3, "root.1", DONE, PASS, execution=2, attempts_before=1, attempts_after=1),
        record(4, "root.2", RETRY, SKIPPED, tokens=TokenUsage(7, 3, 0), cost_usd=0.25),
        record(
            5,
            "root.2",
            RETRY,
            SKIPPED,
            execution=2,
            attempts_before=1,
            attempts_after=2,
            error_kind=ErrorKind.AGENT,
            error="immutability failed: passed node 'root.1' changed in next tree",
            cost_usd=0.5,
        ),
        record(
            6,
            "root.2",
            RETRY,
            SKIPPED,
            execution=3,
            attempts_before=2,
            attempts_after=2,
            error_kind=ErrorKind.RUNNER,
            error="agent exited with code 3",
            duration_ms=7000,
        ),
    ]
)
STATE = RunState(run_id=RUN, next_iter=7, last_status=RETRY, last_guard=SKIPPED)


# ---------------------------------------------------------------- status


def test_status_tree_is_drawn_in_canonical_order_whatever_the_stored_order() -> None:
    view = status_view(TREE, STATE, 100, HISTORY)
    assert [(row.id, row.path, row.depth) for row in view.tree] == [
        ("root", "root", 0),
        ("root.1", "root/root.1", 1),
        ("root.2", "root/root.2", 1),
        ("root.3", "root/root.3", 1),
    ]


def test_status_rows_carry_display_state_and_execution_count() -> None:
    document = status_to_json(status_view(TREE, STATE, 100, HISTORY))
    assert [(row["id"], row["state"], row["executions"]) for row in document["tree"]] == [
        ("root", "failed", 1),
        ("root.1", "completed", 2),
        ("root.2", "failed", 3),
        ("root.3", "pending", 0),
    ]


def test_status_document_of_a_started_run() -> None:
    document = status_to_json(status_view(TREE, STATE, 100, HISTORY))
    assert_valid(document, "status")
    assert {key: document[key] for key in ("run", "run_id", "branch")} == {
        "run": "started",
        "run_id": RUN,
        "branch": f"runner/{RUN}",
    }
    assert (document["next_iteration"], document["max_iterations"]) == (7, 100)
    assert document["leaves"] == {"passed": 1, "total": 3}
    assert document["selected"] == {
        "status": "open",
        "id": "root.2",
        "path": "root/root.2",
        "attempts": 2,
        "max_attempts": 3,
    }
    assert document["stuck"] == []
    assert document["last"] == {"status": "retry", "guard": "skipped", "summary": ""}
    assert document["running"] is None
    assert document["removed"] == []
    assert document["budgets"] == []


def test_status_shows_each_budget_set_spent_vs_limit() -> None:
    budget = BudgetConfig(max_tokens=120, max_wall_secs=60)
    document = status_to_json(status_view(TREE, STATE, 100, HISTORY, budget=budget))
    assert_valid(document, "status")
    total_secs = sum(record.duration_ms for record in HISTORY.records) / 1000
    assert document["budgets"] == [
        {"budget": "tokens", "spent": 120, "limit": 120, "exhausted": True},
        {"budget": "wall_secs", "spent": total_secs, "limit": 60, "exhausted": False},
    ]


def test_status_before_start_says_not_started_and_still_draws_the_tree() -> None:
    document = status_to_json(status_view(tree("root"), RunState(), 100, ExecutionHistory()))
    assert_valid(document, "status")
    assert (document["run"], document["run_id"], document["branch"]) == ("not-started", None, None)
    assert document["selected"]["id"] == "root"
    assert document["last"] == {"status": None, "guard": None, "summary": ""}
    assert [(row["id"], row["state"]) for row in document["tree"]] == [("root", "pending")]


def test_status_of_a_complete_tree_has_no_selected_leaf() -> None:
    done = tree("root", tree("a", passes=True), passes=True)
    document = status_to_json(status_view(done, STATE, 100, ExecutionHistory()))
    assert_valid(document, "status")
    assert document["selected"] == dict.fromkeys(
        ("id", "path", "attempts", "max_attempts"), None
    ) | {"status": "complete"}


def test_status_lists_every_stuck_leaf_and_selects_the_leftmost() -> None:
    stuck = tree(
        "root",
        tree("a", order=0, attempts=3, max_attempts=3),
        tree("b", order=1, attempts=1, max_attempts=1),
    )
    document = status_to_json(status_view(stuck, STATE, 100, ExecutionHistory()))
    assert_valid(document, "status")
    assert document["selected"]["status"] == "stuck"
    assert [(leaf["id"], leaf["path"]) for leaf in document["stuck"]] == [
        ("a", "root/a"),
        ("b", "root/b"),
    ]
    assert {row["id"]: row["state"] for row in document["tree"]}["a"] == "stuck"


def test_status_shows_the_node_of_this_runs_journal_running() -> None:
    document = status_to_json(status_view(TREE, STATE, 100, HISTORY, journal("root.2")))
    assert_valid(document, "status")
    states = {row["id"]: row["state"] for row in document["tree"]}
    assert (states["root"], states["root.2"]) == ("running", "running")
    assert document["running"] == {
        "iteration": 6,
        "node_id": "root.2",
        "role": "executor",
        "phase": "running",
        "started_at": "2026-01-01T00:10:00.000Z",
    }


def test_status_ignores_a_journal_of_another_run() -> None:
    view = status_view(TREE, STATE, 100, HISTORY, journal("root.2", run_id="run-other"))
    assert view.running is None
    assert NodeDisplayState.RUNNING not in {row.state for row in view.tree}


def test_status_lists_executed_nodes_the_tree_lost_as_removed() -> None:
    history = ExecutionHistory.of([record(1, "root.9", RETRY, SKIPPED)])
    document = status_to_json(status_view(tree("root"), STATE, 100, history))
    assert_valid(document, "status")
    assert document["removed"] == [{"id": "root.9", "executions": 1, "state": "skipped"}]


def test_canonical_preorder_sorts_siblings_by_order_then_id() -> None:
    shuffled = tree("r", tree("b", order=1), tree("c", order=0), tree("a", order=1))
    assert [node.id for node, _, _ in canonical_preorder(shuffled)] == ["r", "c", "a", "b"]


# ---------------------------------------------------------------- history


def test_history_lists_every_iteration_as_its_meta_json() -> None:
    document = json_form(HistoryDocument(RUN, None, history_records(HISTORY, None), (), ("w",)))
    assert_valid(document, "history")
    assert [row["iter"] for row in document["iterations"]] == [1, 2, 3, 4, 5, 6]
    assert document["iterations"][4] == record_to_meta(HISTORY.records[4])
    assert (document["node"], document["warnings"]) == (None, ["w"])


def test_history_of_one_node_keeps_only_its_iterations() -> None:
    document = json_form(HistoryDocument(RUN, "root.1", history_records(HISTORY, "root.1"), (), ()))
    assert_valid(document, "history")
    assert [row["iter"] for row in document["iterations"]] == [2, 3]
    assert history_records(HISTORY, "nope") == ()


# ---------------------------------------------------------------- show


def test_show_document_lists_every_file_and_the_heads_of_logs_only() -> None:
    files = [
        FileFacts("executor.log", 5000, ("=== stdout ===", "hello"), True),
        FileFacts("meta.json", 455),
    ]
    shown = IterationFiles(
        RUN, 4, ".runner/iterations/x/4", HISTORY.records[3], None, None, "missing", tuple(files)
    )
    document = json_form(shown)
    # `runner show --json` adds the iteration's commit facet to this document.
    assert_valid(json_form(ShowDocument(shown, CommitFacet(None, ()))), "show")
    assert document["files"] == [
        {"name": "executor.log", "size": 5000},
        {"name": "meta.json", "size": 455},
    ]
    assert document["logs"] == [
        {
            "name": "executor.log",
            "size": 5000,
            "head": ["=== stdout ===", "hello"],
            "truncated": True,
        }
    ]
    assert document["meta"] == record_to_meta(HISTORY.records[3])


# ---------------------------------------------------------------- report


def figures(tree_: Node | None = TREE, **changes: Any) -> RunFigures:
    base = RunFigures(run_id=RUN, history=HISTORY, tree=tree_, next_iteration=7, max_iterations=100)
    return attrs.evolve(base, **changes)


def test_report_summary_adds_the_runner_figures_to_seed_004() -> None:
    document = json_form(build_report(figures()))
    assert_valid(document, "report")
    summary = document["summary"]
    assert summary["total_executions"] == 6
    assert (summary["successful_executions"], summary["failed_executions"]) == (2, 4)
    assert summary["execution_order"] == ["root", "root.1", "root.1", "root.2", "root.2", "root.2"]
    assert (summary["attempts_consumed"], summary["runner_errors"], summary["agent_errors"]) == (
        3,
        1,
        1,
    )
    assert (summary["guard_passes"], summary["guard_failures"]) == (1, 1)
    assert summary["total_tokens"] == {"input": 107, "output": 13, "cached": 50}
    assert summary["total_cost_usd"] == 0.75


def test_report_shows_each_budget_set_and_every_node_s_subtree_totals() -> None:
    budget = BudgetConfig(max_cost_usd=0.5, max_tokens=1000)
    document = json_form(build_report(figures(budget=budget)))
    assert_valid(document, "report")
    assert document["budgets"] == [
        {"budget": "cost_usd", "spent": 0.75, "limit": 0.5, "exhausted": True},
        {"budget": "tokens", "spent": 120, "limit": 1000, "exhausted": False},
    ]
    totals = {row["node_id"]: row for row in document["subtree_totals"]}
    assert list(totals) == ["root", "root.1", "root.2", "root.3"]
    assert (totals["root"]["executions"], totals["root"]["cost_usd"]) == (6, 0.75)
    assert totals["root"]["tokens"] == {"input": 107, "output": 13, "cached": 50}
    assert (totals["root.1"]["executions"], totals["root.1"]["cost_usd"]) == (2, None)
    assert (totals["root.3"]["executions"], totals["root.3"]["duration_ms"]) == (0, 0)


def test_report_without_a_budget_or_a_tree_has_neither() -> None:
    document = json_form(build_report(figures(None)))
    assert (document["budgets"], document["subtree_totals"]) == ([], [])


def test_report_nodes_follow_the_tree_with_its_attempts_and_display_state() -> None:
    document = json_form(build_report(figures()))
    assert [
        (row["node_id"], row["state"], row["executions"], row["attempts"])
        for row in document["nodes"]
    ] == [("root", "failed", 1, 0), ("root.1", "completed", 2, 1), ("root.2", "failed", 3, 2)]


def test_report_puts_nodes_the_tree_lost_last_sorted_by_id() -> None:
    history = ExecutionHistory.of(
        [record(1, "z", RETRY, SKIPPED), record(2, "root"), record(3, "b", RETRY, SKIPPED)]
    )
    document = json_form(build_report(figures(tree("root"), history=history)))
    assert_valid(document, "report")
    assert [(row["node_id"], row["path"], row["state"]) for row in document["nodes"]] == [
        ("root", "root", "pending"),
        ("b", None, "skipped"),
        ("z", None, "skipped"),
    ]


def test_report_without_a_tree_has_no_states_and_sorts_nodes_by_id() -> None:
    document = json_form(build_report(figures(None)))
    assert_valid(document, "report")
    assert [(row["node_id"], row["state"], row["path"]) for row in document["nodes"]] == [
        ("root", None, None),
        ("root.1", None, None),
        ("root.2", None, None),
    ]


def test_report_ranks_slowest_iterations_and_most_retried_nodes_top_five() -> None:
    document = json_form(build_report(figures()))
    assert [(row["iter"], row["duration_ms"]) for row in document["slowest"]] == [
        (6, 7000),
        (2, 5000),
        (3, 1000),
        (4, 1000),
        (5, 1000),
    ]
    assert document["most_retried"] == [
        {"node_id": "root.2", "attempts_consumed": 2, "executions": 3},
        {"node_id": "root.1", "attempts_consumed": 1, "executions": 2},
    ]


# ---------------------------------------------------------------- metrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_text_is_pinned_byte_for_byte() -> None:
    history = ExecutionHistory.of(
        [
            record(1, "root", DECOMPOSED, SKIPPED, duration_ms=1500),
            record(2, "a", DONE, FAIL, tokens=TokenUsage(10, 2, 1), cost_usd=0.5),
        ]
    )
    small = tree("root", tree("a", attempts=1), tree("b", order=1, passes=True))
    text = metrics_text(RunFigures("run-x", history, small, 3, 10))
    assert text == (
        "# HELP runner_executions_total Iterations recorded in the run's log, by agent status "
        "and guard outcome.\n"
        "# TYPE runner_executions_total counter\n"
        'runner_executions_total{run_id="run-x",status="decomposed",guard="skipped"} 1\n'
        'runner_executions_total{run_id="run-x",status="done",guard="fail"} 1\n'
        'runner_executions_total{run_id="run-x",status="done",guard="pass"} 0\n'
        'runner_executions_total{run_id="run-x",status="done",guard="skipped"} 0\n'
        'runner_executions_total{run_id="run-x",status="retry",guard="skipped"} 0\n'
        "# HELP runner_tokens_total Agent tokens reported by the run's iterations, by kind "
        "(input, output, cached).\n"
        "# TYPE runner_tokens_total counter\n"
        'runner_tokens_total{run_id="run-x",kind="input"} 10\n'
        'runner_tokens_total{run_id="run-x",kind="output"} 2\n'
        'runner_tokens_total{run_id="run-x",kind="cached"} 1\n'
        "# HELP runner_attempts_consumed_total Iterations that used up one of their node's "
        "attempts.\n"
        "# TYPE runner_attempts_consumed_total counter\n"
        'runner_attempts_consumed_total{run_id="run-x"} 1\n'
        "# HELP runner_errors_total Iterations that ended in an agent error or a runner error, "
        "by kind.\n"
        "# TYPE runner_errors_total counter\n"
        'runner_errors_total{run_id="run-x",kind="agent"} 0\n'
        'runner_errors_total{run_id="run-x",kind="runner"} 0\n'
        "# HELP runner_execution_duration_seconds_total Wall-clock seconds spent in the run's "
        "iterations (agent and guards).\n"
        "# TYPE runner_execution_duration_seconds_total counter\n"
        'runner_execution_duration_seconds_total{run_id="run-x"} 2.5\n'
        "# HELP runner_cost_usd_total Agent cost in US dollars, when the agent reported one "
        "(no sample otherwise).\n"
        "# TYPE runner_cost_usd_total counter\n"
        'runner_cost_usd_total{run_id="run-x"} 0.5\n'
        "# HELP runner_next_iteration The number the run's next iteration will get.\n"
        "# TYPE runner_next_iteration gauge\n"
        'runner_next_iteration{run_id="run-x"} 3\n'
        "# HELP runner_max_iterations The run-level cap on iterations (max_iterations in "
        "config.toml).\n"
        "# TYPE runner_max_iterations gauge\n"
        'runner_max_iterations{run_id="run-x"} 10\n'
        "# HELP runner_leaves Leaves of the task tree by display state.\n"
        "# TYPE runner_leaves gauge\n"
        'runner_leaves{run_id="run-x",state="pending"} 0\n'
        'runner_leaves{run_id="run-x",state="running"} 0\n'
        'runner_leaves{run_id="run-x",state="completed"} 1\n'
        'runner_leaves{run_id="run-x",state="failed"} 1\n'
        'runner_leaves{run_id="run-x",state="stuck"} 0\n'
        "# HELP runner_success_ratio Successful iterations over all iterations of the run "
        "(0 when none ran).\n"
        "# TYPE runner_success_ratio gauge\n"
        'runner_success_ratio{run_id="run-x"} 0.5\n'
        # The families of the status words and of agent attempts.
        "# HELP runner_iterations_shown_total Iterations by the word every view shows (retry "
        "only for an agent's own retry; merged for a done whose conflicting files a merge "
        "session joined; a runner error by its kind: runner_error, interrupted, "
        "rate_limited, conflict).\n"
        "# TYPE runner_iterations_shown_total counter\n"
        'runner_iterations_shown_total{run_id="run-x",status="done"} 1\n'
        'runner_iterations_shown_total{run_id="run-x",status="retry"} 0\n'
        'runner_iterations_shown_total{run_id="run-x",status="decomposed"} 1\n'
        'runner_iterations_shown_total{run_id="run-x",status="merged"} 0\n'
        'runner_iterations_shown_total{run_id="run-x",status="runner_error"} 0\n'
        'runner_iterations_shown_total{run_id="run-x",status="interrupted"} 0\n'
        'runner_iterations_shown_total{run_id="run-x",status="rate_limited"} 0\n'
        'runner_iterations_shown_total{run_id="run-x",status="conflict"} 0\n'
        "# HELP runner_agent_success_ratio Successful iterations over the iterations whose agent "
        "answered (runner errors apart).\n"
        "# TYPE runner_agent_success_ratio gauge\n"
        'runner_agent_success_ratio{run_id="run-x"} 0.5\n'
    )


def test_metrics_parse_and_carry_the_reports_figures() -> None:
    found = samples(metrics_text(figures()))
    run = ("run_id", RUN)
    assert found[("runner_executions_total", (("guard", "skipped"), run, ("status", "retry")))] == 3
    assert found[("runner_tokens_total", (("kind", "cached"), run))] == 50
    assert found[("runner_attempts_consumed_total", (run,))] == 3
    assert found[("runner_errors_total", (("kind", "agent"), run))] == 1
    assert found[("runner_errors_total", (("kind", "runner"), run))] == 1
    assert found[("runner_execution_duration_seconds_total", (run,))] == 15.3
    assert found[("runner_cost_usd_total", (run,))] == 0.75
    assert found[("runner_leaves", (run, ("state", "failed")))] == 1
    assert found[("runner_success_ratio", (run,))] == pytest.approx(2 / 6)


def test_metrics_without_a_reported_cost_have_no_cost_sample() -> None:
    history = ExecutionHistory.of([record(1, "root")])
    found = samples(metrics_text(figures(history=history)))
    assert not [key for key in found if key[0] == "runner_cost_usd_total"]


def test_metrics_without_a_tree_have_no_leaf_samples() -> None:
    found = samples(metrics_text(figures(None)))
    assert not [key for key in found if key[0] == "runner_leaves"]


def test_metrics_of_an_empty_history_are_zeros() -> None:
    found = samples(metrics_text(figures(history=ExecutionHistory())))
    assert found[("runner_success_ratio", (("run_id", RUN),))] == 0
    assert found[("runner_leaves", (("run_id", RUN), ("state", "pending")))] == 2


def test_metrics_running_leaf_is_counted_running() -> None:
    found = samples(metrics_text(figures(running_node_id="root.3")))
    assert found[("runner_leaves", (("run_id", RUN), ("state", "running")))] == 1


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("plain", "plain"),
        ('say "hi"', 'say \\"hi\\"'),
        ("back\\slash", "back\\\\slash"),
        ("two\nlines", "two\\nlines"),
        ('\\"\n', '\\\\\\"\\n'),
    ],
)
def test_label_values_are_escaped_per_the_text_format(value: str, escaped: str) -> None:
    assert escape_label_value(value) == escaped


def test_an_escaped_label_value_parses_back_to_itself() -> None:
    odd = 'we\\ird "run"\nid'
    text = metrics_text(figures(run_id=odd, history=ExecutionHistory()))
    families = list(text_string_to_metric_families(text))
    assert {sample.labels["run_id"] for family in families for sample in family.samples} == {odd}


# ---------------------------------------------------------------- loop progress


def test_progress_line_names_iteration_node_leaves_and_elapsed_time() -> None:
    assert progress_line(3, 100, TREE, 12.7) == (
        "[iter 3/100] node root.2 · 1/3 leaves passed · 00:12 elapsed"
    )


@pytest.mark.parametrize(
    ("a_tree", "iteration"),
    [
        (tree("root", passes=True), 1),
        (tree("root", attempts=3, max_attempts=3), 1),
        (tree("root"), 101),
    ],
    ids=["complete", "stuck", "over-the-limit"],
)
def test_no_progress_line_when_no_step_will_run(a_tree: Node, iteration: int) -> None:
    assert progress_line(iteration, 100, a_tree, 0) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "00:00"),
        (59.9, "00:59"),
        (61, "01:01"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (-1, "00:00"),
    ],
)
def test_elapsed_text_is_minutes_and_seconds_then_hours(seconds: float, text: str) -> None:
    assert elapsed_text(seconds) == text


def test_show_names_the_attempt_ref_of_an_iteration_not_judged_a_pass() -> None:
    facet = CommitFacet("a" * 40, ("x.txt | 1 +",), ("refs/runner/attempts/run-1/2", "b" * 40))
    assert facet.lines()[1] == (
        f"attempt: refs/runner/attempts/run-1/2 {'b' * 40} (the agent's files, not on the run "
        "branch)"
    )
    assert json_form(facet)["attempt"] == {
        "ref": "refs/runner/attempts/run-1/2",
        "commit": "b" * 40,
    }
