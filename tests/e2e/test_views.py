"""End-to-end specification of `runner status/history/show/report/metrics` and the loop's live line.

One real run is made once for the module by the real CLI with the fake command agent: a
decomposition, a guard failure, a pass, a retry, an agent error (the agent edits a passed node)
and a runner error (the agent exits 3), each iteration reporting tokens through
RUNNER_USAGE_PATH. Tests that damage or extend it work on a copy. Every `--json` output is
validated against the schema shipped in the wheel; `runner metrics` is parsed by
prometheus_client's own parser.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.tree.model import AgentRoleValue
from runner_shell.store.layout import RunnerPaths
from runner_shell.views.follow import _running_log
from runner_shell.views.iteration_files import LOG_HEAD_BYTES, LOG_HEAD_LINES, log_head
from tests.helpers.crash import spawn
from tests.helpers.e2e import (
    PYTHON,
    Project,
    ProjectFactory,
    assert_one_error_line,
    child_spec,
    lines,
    node,
)

# (input, output, cached) tokens each iteration of the scenario reports.
TOKENS = {1: (100, 20, 0), 2: (200, 30, 50), 3: (300, 40, 100), 4: (50, 5, 0), 5: (60, 6, 10)}
TOKENS[6] = (70, 7, 0)


def schema(name: str) -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath(f"views/{name}.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def json_output(project: Project, command: str, *args: str) -> dict[str, Any]:
    """`runner <command> ... --json`, checked: exit 0 and valid against its schema."""
    result = project.runner(command, *args, "--json")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, schema(command), cls=jsonschema.Draft202012Validator)
    return document


def metric_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


# The scenario's agent and guard are scripted by iteration and these tests pin what each
# numbered iteration did. With several slots the three leaves run at once and the iterations are
# numbered as they are scheduled, so these run with one slot until the scenario is rewritten
# keyed by node (tests/helpers/e2e.py `agent_script_by_node`).
ITERATION_NUMBERED = pytest.mark.one_slot


@attrs.frozen
class Scenario:
    project: Project
    run_id: str
    loop: subprocess.CompletedProcess[str]


def usage(iteration: int) -> dict[str, int]:
    """What the agent writes to RUNNER_USAGE_PATH (it works in a scratch checkout, so never to
    a path of the run's repository)."""
    keys = ("input_tokens", "output_tokens", "cached_input_tokens")
    return dict(zip(keys, TOKENS[iteration], strict=True))


def scenario_actions(run_id: str) -> dict[int, dict[str, Any]]:
    children = [child_spec("Parser"), child_spec("Printer"), child_spec("Docs")]
    done = {"status": "done", "summary": "implemented it"}
    return {
        1: {"output": {"summary": "split in three", "children": children}},
        2: {"output": done, "stdout": "wrote parser.py\n"},
        3: {"output": done},
        4: {"output": {"status": "retry", "summary": "need the grammar first"}},
        5: {"output": done, "tree_ops": [["set", "root.1", "title", "Hijacked"]]},
        6: {"stderr": "boom\n", "exit": 3},
    }


@pytest.fixture(scope="module")
def scenario(make_project: ProjectFactory, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    project = make_project(tmp_path_factory.mktemp("views"), "started")
    # The scenario ends at its runner error, as `max_consecutive_runner_errors = 0` makes it.
    run_id = project.prepare(
        node("root", next_="decompose", title="Build the calculator"),
        loop={"max_consecutive_runner_errors": 0},
    )
    actions = scenario_actions(run_id)
    for iteration, action in actions.items():
        action["usage"] = usage(iteration)
    project.agent_script(actions)
    project.guard_script([{"stdout": "FAIL test_parse\n" * 50, "exit": 1}, {"stdout": "ok\n"}])
    loop = project.runner("loop")
    return Scenario(project, run_id, loop)


def clone(scenario: Scenario, tmp_path: Path) -> Project:
    """A copy of the scenario's repository (iteration log included) to damage or extend."""
    root = tmp_path / "repo"
    shutil.copytree(scenario.project.root, root, symlinks=True)
    original = scenario.project
    return Project(root, original.harness, original.scripts, original.env)


# ---------------------------------------------------------------- the scenario itself


@ITERATION_NUMBERED
def test_scenario_loop_lines_are_unchanged_when_stdout_is_not_a_terminal(
    scenario: Scenario,
) -> None:
    run = scenario.run_id
    assert lines(scenario.loop.stdout) == [
        f"loop: step run={run} iter=1 node=root status=decomposed guard=skipped",
        f"loop: step run={run} iter=2 node=root.1 status=done guard=fail",
        f"loop: step run={run} iter=3 node=root.1 status=done guard=pass",
        f"loop: step run={run} iter=4 node=root.2 status=retry guard=skipped",
        f"loop: step run={run} iter=5 node=root.2 status=retry guard=skipped",
        # The runner error's word, then the loop's own last line.
        f"loop: step run={run} iter=6 node=root.2 status=runner_error guard=skipped",
        f"loop: status=runner_error run={run} steps=6 started_at_iter=1"
        " error=executor agent exited with status 3",
    ]
    assert scenario.loop.returncode == 1
    assert lines(scenario.loop.stderr) == [
        "runner: runner error: executor agent exited with status 3"
    ]


# ---------------------------------------------------------------- runner status


@ITERATION_NUMBERED
def test_status_names_run_progress_selected_leaf_and_draws_the_tree(scenario: Scenario) -> None:
    result = scenario.project.runner("status", "--tree")
    run = scenario.run_id
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert lines(result.stdout) == [
        f"status: run={run} branch=runner/{run}",
        "status: next_iter=7 max_iterations=100",
        "status: leaves passed=1 total=3",
        "status: selected=open id=root.2 path=root/root.2 attempts=2/3",
        "status: stuck=none",
        "status: last status=runner_error guard=skipped",
        # the e2e configs say mode = "off"; the environment's allow-list holds even so
        "status: sandbox=off userns=no caps=host seccomp=no fs=host env=listed net=host"
        " limits=none",
        "tree:",
        "  root  failed  attempts=0/3  Build the calculator",
        "    root.1  completed  attempts=1/3  Parser",
        "    root.2  failed  attempts=2/3  Printer",
        "    root.3  pending  attempts=0/3  Docs",
    ]


@ITERATION_NUMBERED
def test_status_summarizes_the_tree_by_default(scenario: Scenario) -> None:
    """Without --tree: the counts per display state and the nodes that need a look (here the
    selected leaf), never one line per node."""
    result = scenario.project.runner("status")
    run = scenario.run_id
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert lines(result.stdout) == [
        f"status: run={run} branch=runner/{run}",
        "status: next_iter=7 max_iterations=100",
        "status: leaves passed=1 total=3",
        "status: selected=open id=root.2 path=root/root.2 attempts=2/3",
        "status: stuck=none",
        "status: last status=runner_error guard=skipped",
        # the e2e configs say mode = "off"; the environment's allow-list holds even so
        "status: sandbox=off userns=no caps=host seccomp=no fs=host env=listed net=host"
        " limits=none",
        "tree: nodes=4 pending=1 running=0 completed=1 failed=2 stuck=0 skipped=0 "
        "(every node: runner status --tree)",
        "  root.2  failed  attempts=2/3  Printer",
    ]


@ITERATION_NUMBERED
def test_status_json_is_valid_and_carries_the_same_facts(scenario: Scenario) -> None:
    document = json_output(scenario.project, "status")
    assert (document["run"], document["run_id"]) == ("started", scenario.run_id)
    assert document["leaves"] == {"passed": 1, "total": 3}
    assert document["selected"]["id"] == "root.2"
    assert [(row["id"], row["depth"], row["executions"]) for row in document["tree"]] == [
        ("root", 0, 1),
        ("root.1", 1, 2),
        ("root.2", 1, 3),
        ("root.3", 1, 0),
    ]


def test_status_before_start_reports_run_not_started(unstarted_project: Project) -> None:
    project = unstarted_project
    result = project.runner("status")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[:5] == [
        "status: run=not-started",
        "status: next_iter=1 max_iterations=100",
        "status: leaves passed=0 total=1",
        "status: selected=open id=root path=root attempts=0/3",
        "status: stuck=none",
    ]
    document = json_output(project, "status")
    assert (document["run"], document["run_id"], document["branch"]) == ("not-started", None, None)


WAITING_AGENT = """\
import json, os, sys, time
from pathlib import Path

sys.stdin.read()
harness = Path(os.environ["RUNNER_TEST_HARNESS"])
(harness / "started").write_text("")
deadline = time.monotonic() + 20
while not (harness / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps({"status": "done", "summary": "ok"}))
"""


def test_status_shows_the_node_of_an_iteration_in_progress_as_running(project: Project) -> None:
    agent = project.harness / "waiting_agent.py"
    agent.write_text(WAITING_AGENT, encoding="utf-8")
    project.prepare(node("root"), agent_command=[PYTHON, str(agent)])
    step = spawn(project, "step")
    try:
        deadline = time.monotonic() + 20
        while not (project.harness / "started").exists():
            assert time.monotonic() < deadline and step.poll() is None, "the agent never started"
            time.sleep(0.02)
        status = project.runner("status", "--json")
    finally:
        (project.harness / "release").write_text("")
        _, err = step.communicate(timeout=30)
    assert step.returncode == 0, err
    # The iteration in progress has no meta.json yet: that is no reason for a warning.
    assert (status.returncode, status.stderr) == (0, "")
    document = json.loads(status.stdout)
    jsonschema.validate(document, schema("status"), cls=jsonschema.Draft202012Validator)
    assert document["running"] is not None
    assert (document["running"]["iteration"], document["running"]["node_id"]) == (1, "root")
    assert document["tree"][0]["state"] == "running"


# ---------------------------------------------------------------- runner history


@ITERATION_NUMBERED
def test_history_lists_one_row_per_iteration_with_tokens_and_error_kind(
    scenario: Scenario,
) -> None:
    result = scenario.project.runner("history")
    assert result.returncode == 0, result.stderr
    header, *rows = lines(result.stdout)[1:]
    assert lines(result.stdout)[0] == f"history: run={scenario.run_id} iterations=6"
    assert header.split() == [
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
    cells = [row.split(maxsplit=7) for row in rows]
    assert [cell[:5] for cell in cells] == [
        ["1", "root", "decomposer", "decomposed", "skipped"],
        ["2", "root.1", "executor", "done", "fail"],
        ["3", "root.1", "executor", "done", "pass"],
        ["4", "root.2", "executor", "retry", "skipped"],
        ["5", "root.2", "executor", "retry", "skipped"],
        ["6", "root.2", "executor", "runner_error", "skipped"],
    ]
    assert [cell[6] for cell in cells] == ["/".join(map(str, TOKENS[n])) for n in range(1, 7)]
    errors = [cell[7] for cell in cells]
    assert errors[:4] == ["-"] * 4
    assert errors[4].startswith("agent: immutability failed: passed node 'root.1'")
    assert errors[5] == "runner: executor agent exited with status 3"


@ITERATION_NUMBERED
def test_history_json_of_one_node_is_valid(scenario: Scenario) -> None:
    document = json_output(scenario.project, "history", "--node", "root.2")
    assert document["node"] == "root.2"
    rows = document["iterations"]
    assert [(row["iter"], row["execution"], row["error_kind"]) for row in rows] == [
        (4, 1, None),
        (5, 2, "agent"),
        (6, 3, "runner"),
    ]
    assert [(row["attempts_before"], row["attempts_after"]) for row in rows] == [
        (0, 1),
        (1, 2),
        (2, 2),
    ]
    assert rows[2]["tokens"] == dict(zip(("input", "output", "cached"), TOKENS[6], strict=True))
    assert document["warnings"] == []


@ITERATION_NUMBERED
def test_history_skips_damaged_and_missing_meta_json_with_a_warning_each(
    scenario: Scenario, tmp_path: Path
) -> None:
    project = clone(scenario, tmp_path)
    run_dir = project.runner_dir / "iterations" / scenario.run_id
    (run_dir / "3" / "meta.json").write_text("{not json", encoding="utf-8")
    (run_dir / "4" / "meta.json").unlink()
    meta5 = json.loads((run_dir / "5" / "meta.json").read_text(encoding="utf-8"))
    (run_dir / "5" / "meta.json").write_text(json.dumps(meta5 | {"guard": "maybe"}))

    result = project.runner("history")

    assert result.returncode == 0, result.stderr
    where = f".runner/iterations/{scenario.run_id}"
    warnings = lines(result.stderr)
    assert len(warnings) == 4
    # What the directories lack is read from the archive, so no view or budget undercounts.
    assert warnings[0] == (
        f"runner: warning: {where}/ lacks iterations 3-5: "
        f"read them from refs/runner/logs/{scenario.run_id}"
    )
    assert warnings[1].startswith(f"runner: warning: {where}/3/meta.json: unreadable: ")
    assert warnings[2] == (
        f"runner: warning: {where}/4/meta.json: missing (iteration interrupted?)"
    )
    assert warnings[3] == (
        f"runner: warning: {where}/5/meta.json: guard: must be one of pass, fail, skipped, "
        "got 'maybe'"
    )
    assert [row.split()[0] for row in lines(result.stdout)[2:]] == ["1", "2", "3", "4", "5", "6"]
    document = json_output(project, "history")
    assert [row["iter"] for row in document["iterations"]] == [1, 2, 3, 4, 5, 6]
    assert len(document["warnings"]) == 3
    report = json_output(project, "report")
    assert report["summary"]["total_executions"] == 6


@ITERATION_NUMBERED
def test_history_of_an_earlier_run_is_read_with_run(scenario: Scenario, tmp_path: Path) -> None:
    project = clone(scenario, tmp_path)
    goal = project.goal_path.read_text(encoding="utf-8")
    project.goal_path.write_text(goal.replace(f"id: {scenario.run_id}\n", ""), encoding="utf-8")
    project.commit_setup("a new goal")
    started = project.runner("start")
    assert started.returncode == 0, started.stderr
    second = project.run_id
    assert second != scenario.run_id

    current = json_output(project, "history")
    earlier = json_output(project, "history", "--run", scenario.run_id)
    report = json_output(project, "report", "--run", scenario.run_id)

    assert (current["run_id"], current["iterations"]) == (second, [])
    assert [row["iter"] for row in earlier["iterations"]] == [1, 2, 3, 4, 5, 6]
    # The earlier run's tree is its last tree.after.json, not today's tree.json.
    assert [(row["node_id"], row["state"]) for row in report["nodes"]] == [
        ("root", "failed"),
        ("root.1", "completed"),
        ("root.2", "failed"),
    ]
    text = project.runner("metrics", "--run", scenario.run_id).stdout
    next_iteration = ("runner_next_iteration", (("run_id", scenario.run_id),))
    assert metric_samples(text)[next_iteration] == 7
    # status --run: where the earlier run's branch left it, beside the current run.
    status = json_output(project, "status", "--run", scenario.run_id)
    assert (status["run_id"], status["next_iteration"]) == (scenario.run_id, 7)
    assert json_output(project, "status")["run_id"] == second
    assert (
        f"status: run={scenario.run_id}"
        in project.runner("status", "--run", scenario.run_id).stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--run", "run-nope"), "unknown run 'run-nope' (runs on disk: {run})"),
        (("--run", "../x"), "--run: run id '../x' may contain only letters, digits, "),
    ],
)
def test_history_of_an_unknown_or_invalid_run_is_one_error_line(
    scenario: Scenario, args: tuple[str, ...], message: str
) -> None:
    line = assert_one_error_line(scenario.project.runner("history", *args))
    assert line.startswith(message.format(run=scenario.run_id))


def test_history_before_start_is_one_error_line(unstarted_project: Project) -> None:
    line = assert_one_error_line(unstarted_project.runner("history"))
    assert line == "no run started in run_state.json (run 'runner start')"


# ---------------------------------------------------------------- runner show


@ITERATION_NUMBERED
def test_show_prints_meta_output_files_and_log_heads(scenario: Scenario) -> None:
    result = scenario.project.runner("show", "2")
    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert (
        out[0] == f"show: run={scenario.run_id} iter=2 dir=.runner/iterations/{scenario.run_id}/2"
    )
    assert out[1] == "node: root.1 role=executor execution=1 backend=command"
    assert out[2] == "outcome: status=done guard=fail attempts=0->1"
    iter_dir = scenario.project.runner_dir / "iterations" / scenario.run_id / "2"
    banner = f"--- guard.log ({(iter_dir / 'guard.log').stat().st_size} bytes) ---"
    guard_head = out[out.index(banner) + 1 :]
    assert guard_head[:3] == ["=== stdout ===", "FAIL test_parse", "FAIL test_parse"]
    assert f"[… more in .runner/iterations/{scenario.run_id}/2/guard.log]" in out


@ITERATION_NUMBERED
def test_show_json_is_valid_and_bounds_every_log(scenario: Scenario) -> None:
    document = json_output(scenario.project, "show", "6")
    assert document["meta"]["error_kind"] == "runner"
    assert document["output"] == {"status": "retry", "summary": ""}
    names = [entry["name"] for entry in document["files"]]
    assert {"meta.json", "executor.log", "runner_error.log", "tree.after.json"} <= set(names)
    assert names == sorted(names)
    logs = {log["name"]: log for log in document["logs"]}
    assert set(logs) == {"executor.log", "runner_error.log"}
    assert logs["runner_error.log"]["head"] == ["runner error: executor agent exited with status 3"]
    guard = json_output(scenario.project, "show", "2")["logs"]
    guard_log = next(log for log in guard if log["name"] == "guard.log")
    assert (len(guard_log["head"]), guard_log["truncated"]) == (LOG_HEAD_LINES, True)


def test_show_of_a_huge_log_reads_only_its_head(scenario: Scenario, tmp_path: Path) -> None:
    project = clone(scenario, tmp_path)
    log = project.runner_dir / "iterations" / scenario.run_id / "4" / "executor.log"
    with log.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: instant to make, costly only if read
    document = json_output(project, "show", "4")
    shown = next(entry for entry in document["logs"] if entry["name"] == "executor.log")
    assert (shown["size"], shown["truncated"]) == (64 * 1024 * 1024, True)
    assert sum(len(line) for line in shown["head"]) <= LOG_HEAD_BYTES


def test_log_head_never_reads_past_its_byte_budget(tmp_path: Path) -> None:
    log = tmp_path / "executor.log"
    log.write_text("".join(f"line {n}\n" for n in range(10_000)), encoding="utf-8")
    head, truncated = log_head(log, log.stat().st_size)
    assert head == tuple(f"line {n}" for n in range(LOG_HEAD_LINES))
    assert truncated
    log.write_text("only\n", encoding="utf-8")
    assert log_head(log, log.stat().st_size) == (("only",), False)


@ITERATION_NUMBERED
def test_show_of_an_unknown_iteration_is_one_error_line(scenario: Scenario) -> None:
    line = assert_one_error_line(scenario.project.runner("show", "99"))
    assert line == (f"no iteration 99 in run {scenario.run_id} (iterations on disk: 1-6)")


# ---------------------------------------------------------------- runner report


@ITERATION_NUMBERED
def test_report_json_sums_the_run(scenario: Scenario) -> None:
    document = json_output(scenario.project, "report")
    summary = document["summary"]
    totals = [sum(tokens[k] for tokens in TOKENS.values()) for k in range(3)]
    assert {key: summary[key] for key in list(summary)[:8] if key != "total_duration"} == {
        "total_executions": 6,
        "successful_executions": 2,
        "failed_executions": 4,
        "success_rate": 2 / 6,
        "total_tokens": dict(zip(("input", "output", "cached"), totals, strict=True)),
        "nodes_executed": 3,
        "execution_order": ["root", "root.1", "root.1", "root.2", "root.2", "root.2"],
    }
    assert summary["total_duration"] > 0
    assert {key: summary[key] for key in list(summary)[8:]} == {
        "attempts_consumed": 3,
        "runner_errors": 1,
        "agent_errors": 1,
        "guard_passes": 1,
        "guard_failures": 1,
        "total_cost_usd": None,
    }
    assert [
        (row["node_id"], row["executions"], row["attempts_consumed"]) for row in document["nodes"]
    ] == [("root", 1, 0), ("root.1", 2, 1), ("root.2", 3, 2)]
    assert len(document["slowest"]) == 5
    durations = [row["duration_ms"] for row in document["slowest"]]
    assert durations == sorted(durations, reverse=True)
    assert document["most_retried"] == [
        {"node_id": "root.2", "attempts_consumed": 2, "executions": 3},
        {"node_id": "root.1", "attempts_consumed": 1, "executions": 2},
    ]


@ITERATION_NUMBERED
def test_report_prints_summary_nodes_slowest_and_most_retried(scenario: Scenario) -> None:
    result = scenario.project.runner("report")
    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert out[0] == f"report: run={scenario.run_id}"
    assert "  execution_order        root, root.1 (x2), root.2 (x3)" in out
    # Over the 5 agent attempts, the runner error apart (was 2/6 = 33.3%).
    assert (
        "  success_rate           40.0% of 5 agent attempts"
        " (conflict=0 interrupted=0 rate_limited=0 runner_error=1 apart)"
    ) in out
    for section in ("summary:", "nodes:", "slowest:", "most retried:"):
        assert section in out
    retried = out[out.index("most retried:") + 1 :]
    assert [row.split() for row in retried] == [
        ["NODE", "ATTEMPTS_CONSUMED", "EXECUTIONS"],
        ["root.2", "2", "3"],
        ["root.1", "1", "2"],
    ]


# ---------------------------------------------------------------- runner metrics


@ITERATION_NUMBERED
def test_metrics_parse_as_prometheus_text_with_the_runs_figures(scenario: Scenario) -> None:
    result = scenario.project.runner("metrics")
    assert result.returncode == 0, result.stderr
    found = metric_samples(result.stdout)
    run = ("run_id", scenario.run_id)

    def executions(status: str, guard: str) -> float:
        return found[("runner_executions_total", (("guard", guard), run, ("status", status)))]

    assert executions("done", "fail") == 1
    assert executions("done", "pass") == 1
    assert executions("retry", "skipped") == 3
    assert executions("decomposed", "skipped") == 1
    assert found[("runner_tokens_total", (("kind", "input"), run))] == 780
    assert found[("runner_tokens_total", (("kind", "cached"), run))] == 160
    assert found[("runner_attempts_consumed_total", (run,))] == 3
    assert found[("runner_errors_total", (("kind", "agent"), run))] == 1
    assert found[("runner_errors_total", (("kind", "runner"), run))] == 1
    assert found[("runner_execution_duration_seconds_total", (run,))] > 0
    assert (found[("runner_next_iteration", (run,))], found[("runner_max_iterations", (run,))]) == (
        7,
        100,
    )
    leaves = {key[1][1][1]: value for key, value in found.items() if key[0] == "runner_leaves"}
    assert leaves == {"pending": 1, "running": 0, "completed": 1, "failed": 1, "stuck": 0}
    assert found[("runner_success_ratio", (run,))] == pytest.approx(2 / 6)
    assert "runner_cost_usd_total{" not in result.stdout
    assert "# TYPE runner_cost_usd_total counter" in result.stdout


def test_metrics_are_byte_identical_from_one_call_to_the_next(scenario: Scenario) -> None:
    assert scenario.project.runner("metrics").stdout == scenario.project.runner("metrics").stdout


# ---------------------------------------------------------------- read-only


@pytest.fixture
def held_lock(scenario: Scenario) -> Iterator[None]:
    """The runner lock held by someone else, as during a `runner loop`."""
    lock = scenario.project.git("rev-parse", "--git-path", "runner.lock").strip()
    fd = os.open(scenario.project.root / lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_inspection_never_takes_the_lock_and_never_writes(
    scenario: Scenario, held_lock: None
) -> None:
    project = scenario.project
    before = (project.snapshot(), project.head(), project.status())
    for args in (("status",), ("history",), ("show", "1"), ("report",), ("metrics",)):
        result = project.runner(*args)
        assert result.returncode == 0, (args, result.stderr)
    assert (project.snapshot(), project.head(), project.status()) == before


# ---------------------------------------------------------------- codex tokens


FAKE_CODEX = """\
#!{python}
import json, sys
from pathlib import Path

sys.stdin.read()
args = sys.argv[1:]
if args[0] != "exec":
    sys.exit("fake codex: expected 'exec'")
events = [
    {{"type": "thread.started", "thread_id": "t-1"}},
    {{"type": "turn.started"}},
    {{"type": "turn.completed",
      "usage": {{"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 50}}}},
    {{"type": "turn.started"}},
    {{"type": "turn.completed",
      "usage": {{"input_tokens": 234, "cached_input_tokens": 100, "output_tokens": 7}}}},
]
for event in events:
    print(json.dumps(event), flush=True)
last = Path(args[args.index("--output-last-message") + 1])
last.write_text(json.dumps({{"status": "done", "summary": "codex did it"}}))
"""


def test_codex_tokens_come_from_its_event_stream(project: Project) -> None:
    bin_dir = project.harness / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(FAKE_CODEX.format(python=sys.executable), encoding="utf-8")
    codex.chmod(0o755)
    project.env["PATH"] = f"{bin_dir}{os.pathsep}{project.env['PATH']}"
    guard = json.dumps([PYTHON, str(project.scripts / "guard.py")])
    project.config_path.write_text(
        textwrap.dedent(
            f"""\
            iteration_timeout_secs = 30

            [guard]
            command = {guard}

            [agent]
            backend = "codex"
            command = []

            [sandbox]
            mode = "off"
            """
        ),
        encoding="utf-8",
    )
    run_id = project.prepare(node("root"))
    step = project.runner("step")
    assert step.returncode == 0, step.stderr

    history = json_output(project, "history")
    metrics = metric_samples(project.runner("metrics").stdout)

    (row,) = history["iterations"]
    assert (row["backend"], row["status"], row["guard"]) == ("codex", "done", "pass")
    assert row["tokens"] == {"input": 1234, "output": 57, "cached": 700}
    run = ("run_id", run_id)
    assert [metrics[("runner_tokens_total", (("kind", k), run))] for k in ("input", "output")] == [
        1234,
        57,
    ]
    status = json_output(project, "status")
    assert status["selected"]["status"] == "complete"


# ---------------------------------------------------------------- runner loop on a terminal


def test_loop_on_a_terminal_draws_a_live_progress_line_on_stderr(project: Project) -> None:
    project.prepare(node("root"))
    project.agent_script({1: {"output": {"status": "done", "summary": "ok"}}})
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [PYTHON, "-m", "runner_shell", "loop"],
            cwd=project.root,
            env=project.env,
            stdout=terminal,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 0, stderr
    assert stderr.startswith("\r[iter 1/100] node root · 0/1 leaves passed · 00:00 elapsed\x1b[K")
    # Wiped before each `loop:` line, so a terminal shows only the lines themselves.
    assert stderr.endswith("\r\x1b[K")
    assert b"loop: status=complete" in shown


@pytest.mark.parametrize(
    ("role", "written", "shown"),
    [
        ("executor", [], "executor.log"),
        ("decomposer", ["planner_executor.log"], "planner_executor.log"),
        ("executor", ["executor.log", ".guard.log.pending"], ".guard.log.pending"),
        ("executor", [".guard.log.pending", "executor.log"], "executor.log"),
    ],
    ids=["nothing-yet", "decomposer", "guard-started", "agent-wrote-last"],
)
def test_status_tails_the_log_of_the_iteration_s_role_written_last(
    tmp_path: Path, role: AgentRoleValue, written: list[str], shown: str
) -> None:
    paths = RunnerPaths(tmp_path)
    journal = Journal("run-1", 3, "root", role, JournalPhase.RUNNING, "2026-01-01T00:00:00Z", 1, "")
    iter_dir = paths.iter_dir("run-1", 3)
    iter_dir.mkdir(parents=True)
    for n, name in enumerate(written):
        (iter_dir / name).write_text(f"{name}\n", encoding="utf-8")
        os.utime(iter_dir / name, ns=(n * 10**9, n * 10**9))

    assert _running_log(paths, journal) == iter_dir / shown
