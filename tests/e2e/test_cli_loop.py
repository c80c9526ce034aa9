"""End-to-end specification of `runner loop` and of what every iteration leaves behind.

The first tests share one scripted run:
the root is decomposed into two children; the first child's guard fails and its output reaches
the retry through failure.md; the second child retries and its summary reaches the next attempt
through history.md; then the tree is complete.
"""

from __future__ import annotations

import datetime
import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from runner_core.run.chain import is_chain_value
from runner_core.run.trailers import CHAIN, ITER, parse_trailers, record_from_trailers
from runner_shell.git.log_archive import read_archived
from tests.helpers.e2e import (
    PYTHON,
    Project,
    ProjectFactory,
    canonical_tree_text,
    child_spec,
    find_node,
    lines,
    node,
    slots_under_test,
)

GUARD_FAILURE = "GUARD-FAILURE: a.txt says 'wrong', expected 'A'"
RETRY_NOTE = "RETRY-NOTE: b.txt needs a header; write it first next time."
DECOMPOSITION = {
    "summary": "Split into A and B.",
    "children": [child_spec("Write A"), child_spec("Write B")],
}
# (node, the agent's n-th run on it) -> (status, guard)
RUNS = {
    ("root", 1): ("decomposed", "skipped"),
    ("root.1", 1): ("done", "fail"),
    ("root.1", 2): ("done", "pass"),
    ("root.2", 1): ("retry", "skipped"),
    ("root.2", 2): ("done", "pass"),
}
# The runs in iteration order. One slot takes the first open leaf each time. With several
# slots, root.1 and root.2 start together once the decomposition merged, and each node's next
# run starts as soon as its previous one merged, so the iterations interleave.
ORDER = (
    [("root", 1), ("root.1", 1), ("root.1", 2), ("root.2", 1), ("root.2", 2)]
    if slots_under_test() == 1
    else [("root", 1), ("root.1", 1), ("root.2", 1), ("root.1", 2), ("root.2", 2)]
)
ITERATION = {run: n for n, run in enumerate(ORDER, start=1)}
# iteration -> (node, status, guard)
EXPECTED_STEPS = {n: (run[0], *RUNS[run]) for run, n in ITERATION.items()}
# The guard runs for each `done`; with several slots, again on the merged result for the two
# jobs (root.1's and root.2's second runs) whose start commit another job's merge moved.
GUARD_CALLS = 3 if slots_under_test() == 1 else 5


@pytest.fixture(scope="module")
def full_loop(
    tmp_path_factory: pytest.TempPathFactory, make_project: ProjectFactory
) -> tuple[Project, subprocess.CompletedProcess[str]]:
    project = make_project(tmp_path_factory.mktemp("full-loop"), "started")
    project.agent_script_by_node(
        {
            ("root", 1): {"output": DECOMPOSITION, "stdout": "planning\n"},
            ("root.1", 1): {
                "files": {"a.txt": "wrong\n"},
                "output": {"status": "done", "summary": "Wrote a."},
            },
            ("root.1", 2): {
                "files": {"a.txt": "A\n"},
                "output": {"status": "done", "summary": "Fixed a."},
            },
            ("root.2", 1): {"output": {"status": "retry", "summary": RETRY_NOTE}},
            ("root.2", 2): {
                "files": {"b.txt": "B\n"},
                "output": {"status": "done", "summary": "Wrote b."},
            },
        }
    )
    project.guard_script_by_iteration(
        {
            ITERATION["root.1", 1]: {
                "exit": 1,
                "stdout": GUARD_FAILURE + "\n",
                "stderr": "1 failed\n",
            }
        },
        default={"stdout": "ok\n"},
    )
    return project, project.runner("loop")


def test_loop_prints_a_line_per_step_and_ends_complete(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, result = full_loop
    run = project.run_id

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        *(
            f"loop: step run={run} iter={n} node={node_id} status={status} guard={guard}"
            for n, (node_id, status, guard) in EXPECTED_STEPS.items()
        ),
        f"loop: status=complete run={run} steps=5 started_at_iter=1",
    ]
    assert result.stderr == ""


def test_each_iteration_is_committed_with_its_subject_and_trailers(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop
    run = project.run_id

    messages = project.git("log", "-n", "5", "--reverse", "--format=%B%x00").split("\0")

    found = [message.strip() for message in messages if message.strip()]
    expected = [
        f"chore(loop): run {run} iter {n} node {node_id} status={status} guard={guard}\n\n"
        f"Runner-Run: {run}\nRunner-Iter: {n}\nRunner-Node: {node_id}\n"
        f"Runner-Status: {status}\nRunner-Guard: {guard}\n"
        for n, (node_id, status, guard) in EXPECTED_STEPS.items()
    ]
    assert len(found) == len(expected)
    for message, head in zip(found, expected, strict=True):
        # The record's other trailers follow, the chain last.
        assert message.startswith(head), message
        trailers = parse_trailers(message)
        assert record_from_trailers(trailers).iteration == int(trailers[ITER])
        assert is_chain_value(trailers[CHAIN])
    assert project.subjects()[-6] == f"chore(loop): start run {run}"


def test_the_agents_work_is_committed_and_the_logs_are_not(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    assert project.status() == ""
    assert project.git("show", "HEAD:a.txt") == "A\n"
    assert project.git("show", "HEAD:b.txt") == "B\n"
    tracked = lines(project.git("ls-files", ".runner"))
    assert not [
        path for path in tracked if path.startswith((".runner/iterations/", ".runner/context/"))
    ]
    assert ".runner/state/tree.json" in tracked


def test_guard_output_reaches_the_next_attempt_through_failure_md(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop
    guard_log = (project.iter_dir(ITERATION["root.1", 1]) / "guard.log").read_text(encoding="utf-8")

    retry = project.record(ITERATION["root.1", 2])

    assert GUARD_FAILURE in guard_log
    assert retry["context"]["failure.md"] == guard_log
    assert GUARD_FAILURE in retry["prompt"]
    assert "failure.md" not in project.record(ITERATION["root.1", 1])["context"]
    assert "failure.md" not in project.record(ITERATION["root.2", 1])["context"]


def test_retry_summary_reaches_the_next_attempt_through_history_md(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    retry = project.record(ITERATION["root.2", 2])

    assert retry["context"]["history.md"] == RETRY_NOTE + "\n"
    assert RETRY_NOTE in retry["prompt"]
    for earlier in range(1, ITERATION["root.2", 2]):
        assert "history.md" not in project.record(earlier)["context"], earlier


def test_the_agent_gets_its_role_node_iteration_and_paths(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop
    state = project.runner_dir / "state"

    for n, (node_id, _status, _guard) in EXPECTED_STEPS.items():
        env = project.record(n)["env"]
        role = "decomposer" if n == 1 else "executor"
        assert env["RUNNER_ROLE"] == role
        assert env["RUNNER_NODE_ID"] == node_id
        assert env["RUNNER_ITER"] == str(n)
        assert env["RUNNER_RUN_ID"] == project.run_id
        assert Path(env["RUNNER_ITER_DIR"]) == project.iter_dir(n)
        # The agent's own directory in the iteration's.
        assert Path(env["RUNNER_OUTPUT_PATH"]).parent == project.iter_dir(n) / "agent"
        assert Path(env["RUNNER_AGENT_DIR"]) == project.iter_dir(n) / "agent"
        assert Path(env["RUNNER_OUTPUT_SCHEMA"]) == state / f"{role}_output.schema.json"
        assert "RUNNER_USAGE_PATH" in env
    # The selected node's goal and acceptance, then the project goal.
    goal_md = project.record(1)["context"]["goal.md"]
    assert goal_md.startswith("# Selected node root: ")
    assert "\n# Project goal\n\n# Goal" in goal_md


def test_the_prompt_arrives_on_stdin_and_names_the_selected_node(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    prompt = project.record(ITERATION["root.1", 1])["prompt"]

    assert "root/root.1" in prompt
    assert "Write A" in prompt
    assert "Goal of Write A." in prompt


def test_meta_json_records_each_iteration_with_utc_timestamps(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    for n, (node_id, status, guard) in EXPECTED_STEPS.items():
        meta = project.meta(n)
        assert (meta["run_id"], meta["iter"], meta["node_id"]) == (project.run_id, n, node_id)
        assert (meta["status"], meta["guard"]) == (status, guard)
        started, ended = (parse_utc(meta["started_at"]), parse_utc(meta["ended_at"]))
        assert started <= ended
        assert isinstance(meta["duration_ms"], int)
        assert 0 <= meta["duration_ms"] <= (ended - started).total_seconds() * 1000 + 1000


def parse_utc(text: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(text)
    assert moment.utcoffset() == datetime.timedelta(0), text
    return moment


@pytest.mark.parametrize(
    ("iteration", "present", "absent"),
    [
        (
            1,
            {"planner_output.json", "planner_executor.log"},
            {"executor.log", "guard.log"},
        ),
        (
            ITERATION["root.1", 1],
            {"executor.log", "guard.log"},
            {"planner_output.json", "planner_executor.log"},
        ),
        (ITERATION["root.2", 1], {"executor.log"}, {"guard.log", "planner_output.json"}),
    ],
    ids=["decompose", "execute-done", "execute-retry"],
)
def test_the_iteration_dir_holds_the_logs_of_what_ran(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
    iteration: int,
    present: set[str],
    absent: set[str],
) -> None:
    project, _ = full_loop
    names = {path.name for path in project.iter_dir(iteration).iterdir()}
    always = {"meta.json", "output.json"}
    snapshots = frozenset({"tree.before.json", "tree.after.json"})
    archived = read_archived(project.root, project.run_id, snapshots, iteration) or {}

    assert always | present <= names
    assert not names & (absent | {"runner_error.log", "agent_error.log"})
    # Only the last iteration keeps its snapshots on disk; the archive holds every one.
    last = project.run_state()["next_iter"] - 1
    assert (snapshots <= names) == (iteration == last)
    assert {name for _, name in archived} == snapshots


def test_output_json_holds_the_status_and_summary(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    outputs = [
        read_json(project.iter_dir(n) / "output.json")
        for n in (1, ITERATION["root.2", 1], ITERATION["root.2", 2])
    ]

    assert outputs == [
        {"status": "decomposed", "summary": "Split into A and B."},
        {"status": "retry", "summary": RETRY_NOTE},
        {"status": "done", "summary": "Wrote b."},
    ]


def test_the_decomposer_output_and_agent_output_are_logged(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop

    assert read_json(project.iter_dir(1) / "planner_output.json") == DECOMPOSITION
    planner_log = (project.iter_dir(1) / "planner_executor.log").read_text(encoding="utf-8")
    assert planner_log.startswith("=== stdout ===\nplanning\n")
    assert "=== stderr ===" in planner_log
    guard_log = (project.iter_dir(ITERATION["root.1", 1]) / "guard.log").read_text(encoding="utf-8")
    assert guard_log.startswith(f"=== stdout ===\n{GUARD_FAILURE}\n")
    assert "=== stderr ===\n1 failed\n" in guard_log


def test_tree_snapshots_are_canonical_and_chain_from_iteration_to_iteration(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop
    names = frozenset({"tree.before.json", "tree.after.json"})
    archived = read_archived(project.root, project.run_id, names) or {}
    snapshots = [
        (
            archived[(n, "tree.before.json")].decode("utf-8"),
            archived[(n, "tree.after.json")].decode("utf-8"),
        )
        for n in EXPECTED_STEPS
    ]
    last = max(EXPECTED_STEPS)
    for name in names:  # the last iteration's, on disk too
        assert (project.iter_dir(last) / name).read_bytes() == archived[(last, name)]

    for before, after in snapshots:
        assert before == canonical_tree_text(json.loads(before))
        assert after == canonical_tree_text(json.loads(after))
    for (_, after), (before, _) in itertools.pairwise(snapshots):
        assert after == before
    assert json.loads(snapshots[0][0])["children"] == []
    assert snapshots[-1][1] == project.tree_path.read_text(encoding="utf-8")


def test_attempts_count_the_guard_failure_and_the_retry(
    full_loop: tuple[Project, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = full_loop
    tree = project.tree()

    assert tree["passes"] is True
    assert [(child["id"], child["title"]) for child in tree["children"]] == [
        ("root.1", "Write A"),
        ("root.2", "Write B"),
    ]
    for child in tree["children"]:
        assert (child["passes"], child["attempts"], child["max_attempts"]) == (True, 1, 3)
    assert project.run_state() == {
        "run_id": project.run_id,
        "next_iter": 6,
        "last_status": "done",
        "last_summary": "Wrote b.",
        "last_guard": "pass",
        "executions": {"root": 1, "root.1": 2, "root.2": 2},
        "chain": project.head_chain(),
    }
    assert project.guard_calls() == GUARD_CALLS


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- how a loop ends


def test_loop_stops_at_a_stuck_leaf_with_exit_3(project: Project) -> None:
    run = project.prepare(
        node("root", next_="decompose", children=[node("root.1", max_attempts=2)])
    )
    retry = {"output": {"status": "retry", "summary": "not yet"}}
    project.agent_script({1: retry, 2: retry})

    result = project.runner("loop")

    assert result.returncode == 3, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root.1 status=retry guard=skipped",
        f"loop: step run={run} iter=2 node=root.1 status=retry guard=skipped",
        f"loop: status=stuck run={run} id=root.1 path=root/root.1 attempts=2/2",
    ]


def test_loop_stops_at_the_iteration_limit_with_exit_1(project: Project) -> None:
    run = project.prepare(node("root", max_attempts=5), max_iterations=2)
    retry = {"output": {"status": "retry", "summary": "not yet"}}
    project.agent_script({1: retry, 2: retry, 3: retry})

    result = project.runner("loop")

    assert result.returncode == 1, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status=retry guard=skipped",
        f"loop: step run={run} iter=2 node=root status=retry guard=skipped",
        f"loop: status=limit run={run} next_iter=3 max_iterations=2 steps=2 started_at_iter=1",
    ]
    assert project.run_state()["next_iter"] == 3


def test_loop_counts_steps_from_the_iteration_it_started_at(project: Project) -> None:
    run = project.prepare(node("root"))
    project.agent_script(
        {
            1: {"output": {"status": "retry", "summary": "first look"}},
            2: {"output": {"status": "done", "summary": "finished"}},
        }
    )
    assert project.runner("step").returncode == 0

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=2 node=root status=done guard=pass",
        f"loop: status=complete run={run} steps=1 started_at_iter=2",
    ]


def test_loop_on_a_complete_tree_takes_no_step(project: Project) -> None:
    run = project.prepare(node("root", passes=True))
    head = project.head()

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"loop: status=complete run={run} steps=0 started_at_iter=1"]
    assert project.head() == head


# ---------------------------------------------------------------- output caps and guard timeout


def test_executor_log_keeps_the_start_of_the_output_and_marks_the_cut(project: Project) -> None:
    project.prepare(node("root"), executor_output_limit_bytes=1000)
    project.agent_script(
        {1: {"stdout_bytes": 5000, "output": {"status": "retry", "summary": "chatty"}}}
    )

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    log = (project.iter_dir(1) / "executor.log").read_text(encoding="utf-8")
    assert log.startswith("=== stdout ===\n" + "x" * 1000 + "\n")
    assert log.count("x") == 1000
    assert "[truncated 4000 bytes]" in log
    assert "=== stderr ===" in log


def test_guard_log_is_capped_at_guard_output_limit_bytes(project: Project) -> None:
    project.prepare(node("root"), guard_output_limit_bytes=500)
    project.agent_script({1: {"output": {"status": "done", "summary": "done"}}})
    project.guard_script([{"stdout_bytes": 3000}])

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    log = (project.iter_dir(1) / "guard.log").read_text(encoding="utf-8")
    assert log.startswith("=== stdout ===\n" + "g" * 500 + "\n")
    assert log.count("g") == 500
    assert "[truncated 2500 bytes]" in log


def test_a_guard_past_the_deadline_fails_with_guard_timed_out(project: Project) -> None:
    run = project.prepare(node("root"), iteration_timeout_secs=1)
    project.agent_script({1: {"output": {"status": "done", "summary": "done"}}})
    project.guard_script([{"stdout": "checking\n", "sleep": 20}])
    begun = time.monotonic()

    result = project.runner("step")

    assert time.monotonic() - begun < 10
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=fail"]
    assert "guard timed out" in (project.iter_dir(1) / "guard.log").read_text(encoding="utf-8")
    assert find_node(project.tree(), "root")["attempts"] == 1


# ---------------------------------------------------------------- demo


def test_demo_runs_a_whole_loop_to_completion(tmp_path: Path, fresh_project: Project) -> None:
    result = subprocess.run(
        [PYTHON, "-m", "runner_shell", "demo", "--dir", str(tmp_path / "demo")],
        env=fresh_project.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    # Where the repository is comes first, before anything that could fail.
    assert lines(result.stdout)[0] == f"demo: repository {tmp_path / 'demo'}"
    steps = [line for line in lines(result.stdout) if line.startswith("loop: step ")]
    assert any(line.endswith("status=decomposed guard=skipped") for line in steps)
    assert any(line.endswith("status=done guard=fail") for line in steps)
    assert any(line.endswith("status=retry guard=skipped") for line in steps)
    assert [line for line in lines(result.stdout) if line.startswith("loop: status=")] == [
        f"loop: status=complete run={run} steps={len(steps)} started_at_iter=1"
        for run in {line.split()[2].removeprefix("run=") for line in steps}
    ]
