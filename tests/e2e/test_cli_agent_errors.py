"""End-to-end specification of runner errors and agent errors.

A runner error (the agent could not be run, failed, timed out or gave unusable output) consumes
no attempt, is logged in runner_error.log, committed, reported with exit 1 and never shown to
the agent. An agent error (the agent broke the tree's rules) restores the previous tree, is
logged in agent_error.log, counts as a `retry` and reaches the next attempt through history.md.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import pytest

from runner_core.backends.registry import BACKENDS, PINNED
from runner_core.run.chain import is_chain_value
from tests.helpers.e2e import (
    Project,
    ProjectFactory,
    assert_one_error_line,
    canonical_tree_text,
    child_spec,
    find_node,
    lines,
    node,
    process_alive,
)

LEAF = node("root")
TWO_OPEN = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
ONE_PASSED = node(
    "root", next_="decompose", children=[node("root.1", passes=True), node("root.2", order=1)]
)
DECOMPOSE_ROOT = node("root", next_="decompose")
DONE = {"status": "done", "summary": "claims to be done"}
RETRY = {"output": {"status": "retry", "summary": "looked around"}}
HIJACK = [["set", "root", "title", "hijacked by the agent"]]


def subject(run: str, iteration: int, node_id: str, status: str, guard: str) -> str:
    return f"chore(loop): run {run} iter {iteration} node {node_id} status={status} guard={guard}"


def next_attempt(tree: Mapping[str, Any], selected: str) -> dict[str, Any]:
    """A well-behaved agent action for the selected node's role."""
    if find_node(tree, selected)["next"] == "execute":
        return RETRY
    return {"output": {"summary": "split", "children": [child_spec("A")]}}


@dataclasses.dataclass(frozen=True)
class Case:
    """One way an iteration goes wrong; `expected` is a regular expression of its message."""

    tree: dict[str, Any]
    action: dict[str, Any]  # what the agent does in iteration 1
    expected: str
    selected: str = "root"
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    executables: tuple[str, ...] = ()  # repo files with the executable bit and no program in them


# ---------------------------------------------------------------- runner errors

UNSTARTABLE = "tools/not-a-program"
RUNNER_ERRORS = {
    "exit-nonzero": Case(
        LEAF,
        {"tree_ops": HIJACK, "output": DONE, "exit": 3},
        re.escape("executor agent exited with status 3"),
    ),
    "output-not-json": Case(
        LEAF,
        {"tree_ops": HIJACK, "output_text": "All done, boss!"},
        re.escape("executor agent output is not JSON: ") + ".+",
    ),
    "output-schema-invalid": Case(
        LEAF,
        {"tree_ops": HIJACK, "output": {"status": "finished", "summary": "x"}},
        re.escape("executor output does not match its schema: ") + ".+",
    ),
    "output-missing": Case(
        LEAF,
        {"tree_ops": HIJACK},
        re.escape("executor agent output unusable: output file ") + ".+ does not exist",
    ),
    "decomposer-output-schema-invalid": Case(
        DECOMPOSE_ROOT,
        {"output": {"summary": "forgot the children"}},
        re.escape("decomposer output does not match its schema: ") + ".+",
    ),
    "agent-cannot-start": Case(
        LEAF,
        {},
        re.escape(
            f"cannot start '{UNSTARTABLE}': exec format error "
            "(check the command in .runner/state/config.toml)"
        ),
        config={"agent_command": [UNSTARTABLE]},
        executables=(UNSTARTABLE,),
    ),
}


def assert_message(message: str, expected: str) -> None:
    assert re.fullmatch(expected, message), message


@dataclasses.dataclass(frozen=True)
class TwoSteps:
    """A run whose first step went wrong, as seen right after it and after one more step."""

    project: Project
    selected: str
    tree_before: bytes
    first: subprocess.CompletedProcess[str]
    tree_after_first: bytes
    state_after_first: dict[str, Any]
    status_after_first: str
    subject_after_first: str
    second: subprocess.CompletedProcess[str]


def two_steps(project: Project, case: Case) -> TwoSteps:
    for name in case.executables:
        path = project.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x00\x01 not a program")
        path.chmod(0o755)
    project.prepare(case.tree, **case.config)
    project.agent_script({1: case.action, 2: next_attempt(case.tree, case.selected)})
    tree_before = project.tree_path.read_bytes()
    first = project.runner("step")
    tree_after_first = project.tree_path.read_bytes()
    state_after_first = project.run_state()
    status_after_first = project.status()
    subject_after_first = project.subjects()[-1]
    if case.config:  # the agent can be started again
        project.set_config()
        project.commit_setup()
    second = project.runner("step")
    assert second.returncode == 0, second.stderr
    return TwoSteps(
        project,
        case.selected,
        tree_before,
        first,
        tree_after_first,
        state_after_first,
        status_after_first,
        subject_after_first,
        second,
    )


@pytest.fixture(scope="module", params=list(RUNNER_ERRORS.values()), ids=list(RUNNER_ERRORS))
def runner_error(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    make_project: ProjectFactory,
) -> tuple[TwoSteps, str]:
    """Step 1 meets the runner error, step 2 is an ordinary retry; and the expected message."""
    case: Case = request.param
    project = make_project(tmp_path_factory.mktemp("runner-error"), "started")
    return two_steps(project, case), case.expected


def test_a_runner_error_is_reported_on_stderr_with_exit_1(
    runner_error: tuple[TwoSteps, str],
) -> None:
    steps, expected = runner_error
    run = steps.project.run_id

    message = assert_one_error_line(steps.first)

    assert message.startswith("runner error: "), message
    assert_message(message.removeprefix("runner error: "), expected)
    # A runner error is shown as `runner_error` (meta.json keeps `retry`).
    assert lines(steps.first.stdout) == [
        f"step: run={run} iter=1 node=root status=runner_error guard=skipped"
    ]


def test_a_runner_error_is_written_to_runner_error_log(runner_error: tuple[TwoSteps, str]) -> None:
    steps, expected = runner_error
    iter_dir = steps.project.iter_dir(1)

    log = (iter_dir / "runner_error.log").read_text(encoding="utf-8")

    assert log == steps.first.stderr.removeprefix("runner: ")
    assert_message(log.removeprefix("runner error: ").removesuffix("\n"), expected)
    assert not (iter_dir / "agent_error.log").exists()
    meta = steps.project.meta(1)
    assert (meta["status"], meta["guard"]) == ("retry", "skipped")


def test_a_runner_error_costs_no_attempt_and_keeps_the_tree(
    runner_error: tuple[TwoSteps, str],
) -> None:
    steps, _ = runner_error

    assert steps.tree_after_first == steps.tree_before
    assert steps.project.guard_calls() == 0


def test_a_runner_error_is_committed(runner_error: tuple[TwoSteps, str]) -> None:
    steps, _ = runner_error
    run = steps.project.run_id

    assert steps.status_after_first == ""
    assert steps.subject_after_first == subject(run, 1, "root", "runner_error", "skipped")


def test_a_runner_error_clears_the_summary_in_run_state(
    runner_error: tuple[TwoSteps, str],
) -> None:
    steps, _ = runner_error

    state = dict(steps.state_after_first)
    assert is_chain_value(state.pop("chain"))
    assert state == {
        "run_id": steps.project.run_id,
        "next_iter": 2,
        "last_status": "retry",
        "last_summary": "",
        "last_guard": "skipped",
        "executions": {"root": 1},
    }


def test_a_runner_error_is_never_shown_to_the_next_attempt(
    runner_error: tuple[TwoSteps, str],
) -> None:
    steps, _ = runner_error
    message = steps.first.stderr.strip().removeprefix("runner: runner error: ")

    seen = steps.project.record(2)

    assert set(seen["context"]) == {"goal.md"}
    assert message not in seen["prompt"]


def test_a_runner_error_clears_the_carried_retry_summary(project: Project) -> None:
    project.prepare(LEAF)
    note = {"output": {"status": "retry", "summary": "EARLIER-NOTE: try the other file"}}
    project.agent_script({1: note, 2: {"exit": 4}, 3: RETRY})
    assert project.runner("step").returncode == 0
    assert project.runner("step").returncode == 1

    assert project.runner("step").returncode == 0

    assert project.record(2)["context"]["history.md"] == "EARLIER-NOTE: try the other file\n"
    assert "history.md" not in project.record(3)["context"]
    assert find_node(project.tree(), "root")["attempts"] == 2


def test_an_agent_timeout_kills_its_whole_process_group(project: Project) -> None:
    # Unsandboxed: the pid the agent writes is the host's (a sandboxed agent's daemons die
    # with its PID namespace: tests/e2e/test_sandboxed_step.py).
    run = project.prepare(LEAF, iteration_timeout_secs=1, sandbox={"mode": "off"})
    project.agent_script({1: {"grandchild_pid_file": "sleeper.pid", "sleep": 30, "output": DONE}})
    begun = time.monotonic()

    result = project.runner("step")

    elapsed = time.monotonic() - begun
    pid = int((project.harness / "sleeper.pid").read_text())
    try:
        assert not process_alive(pid), "the agent's grandchild outlived the timeout"
    finally:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert elapsed < 10
    message = assert_one_error_line(result).removeprefix("runner error: ")
    assert message.startswith("executor agent timed out after "), message
    assert lines(result.stdout) == [
        f"step: run={run} iter=1 node=root status=runner_error guard=skipped"
    ]
    assert (project.iter_dir(1) / "runner_error.log").read_text(encoding="utf-8") == (
        f"runner error: {message}\n"
    )
    assert find_node(project.tree(), "root")["attempts"] == 0
    assert project.subjects()[-1] == subject(run, 1, "root", "runner_error", "skipped")
    assert project.run_state()["last_summary"] == ""


def test_loop_stops_at_a_runner_error_with_exit_1(project: Project) -> None:
    # `max_consecutive_runner_errors = 0` restores the stop at the first runner error.
    run = project.prepare(LEAF, loop={"max_consecutive_runner_errors": 0})
    project.agent_script({1: {"exit": 5}})

    result = project.runner("loop")

    assert assert_one_error_line(result) == "runner error: executor agent exited with status 5"
    # The runner error's word, and the loop's own last line.
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status=runner_error guard=skipped",
        f"loop: status=runner_error run={run} steps=1 started_at_iter=1"
        " error=executor agent exited with status 5",
    ]
    assert project.run_state()["next_iter"] == 2


# ---------------------------------------------------------------- agent errors

TREE_JSON = ".runner/state/tree.json"
AGENT_ERRORS = {
    "children-added-in-execute-mode": Case(
        TWO_OPEN,
        {"tree_ops": [["add_child", "root.2", node("root.2.1")]], "output": DONE},
        re.escape(
            "child additions failed: node 'root.2' gained child 'root.2.1' "
            "(no node may gain children in execute mode)"
        ),
        selected="root.1",
    ),
    "tree-not-json": Case(
        LEAF,
        {"tree_text": "{broken", "output": DONE},
        re.escape("tree.json after the agent: ") + ".*not valid JSON.*",
    ),
    "tree-deleted": Case(
        LEAF,
        {"delete": [TREE_JSON], "output": DONE},
        re.escape("tree.json after the agent: ") + ".*missing.*",
    ),
    "passed-node-edited": Case(
        ONE_PASSED,
        {"tree_ops": [["set", "root.1", "title", "rewritten"]], "output": DONE},
        re.escape("immutability failed: passed node 'root.1' changed in next tree"),
        selected="root.2",
    ),
    "decomposer-returned-no-children": Case(
        DECOMPOSE_ROOT,
        {"output": {"summary": "nothing to split", "children": []}},
        re.escape("decomposer returned no children"),
    ),
}


def with_attempts(tree: Mapping[str, Any], node_id: str, attempts: int) -> dict[str, Any]:
    result = copy.deepcopy(dict(tree))
    stack = [result]
    while stack:
        item = stack.pop()
        if item["id"] == node_id:
            item["attempts"] = attempts
        stack.extend(item["children"])
    return result


@pytest.fixture(scope="module", params=list(AGENT_ERRORS.values()), ids=list(AGENT_ERRORS))
def agent_error(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    make_project: ProjectFactory,
) -> tuple[TwoSteps, dict[str, Any], str]:
    """Step 1 meets the agent error, step 2 is the next attempt; the tree and expected message."""
    case: Case = request.param
    project = make_project(tmp_path_factory.mktemp("agent-error"), "started")
    return two_steps(project, case), case.tree, case.expected


def agent_error_message(steps: TwoSteps) -> str:
    log = (steps.project.iter_dir(1) / "agent_error.log").read_text(encoding="utf-8")
    assert log.startswith("agent error: ") and log.endswith("\n"), log
    return log.removeprefix("agent error: ").removesuffix("\n")


def test_an_agent_error_ends_the_step_as_a_retry(
    agent_error: tuple[TwoSteps, dict[str, Any], str],
) -> None:
    steps, _, _ = agent_error
    run = steps.project.run_id

    assert steps.first.returncode == 0, steps.first.stderr
    assert steps.first.stderr == ""
    assert lines(steps.first.stdout) == [
        f"step: run={run} iter=1 node={steps.selected} status=retry guard=skipped"
    ]
    assert steps.project.guard_calls() == 0


def test_an_agent_error_is_written_to_agent_error_log(
    agent_error: tuple[TwoSteps, dict[str, Any], str],
) -> None:
    steps, _, expected = agent_error

    assert_message(agent_error_message(steps), expected)
    assert not (steps.project.iter_dir(1) / "runner_error.log").exists()


def test_an_agent_error_restores_the_tree_and_costs_an_attempt(
    agent_error: tuple[TwoSteps, dict[str, Any], str],
) -> None:
    steps, tree, _ = agent_error

    expected_tree = canonical_tree_text(with_attempts(tree, steps.selected, 1))
    assert steps.tree_after_first.decode("utf-8") == expected_tree


def test_an_agent_error_is_committed(agent_error: tuple[TwoSteps, dict[str, Any], str]) -> None:
    steps, _, _ = agent_error
    run = steps.project.run_id

    assert steps.status_after_first == ""
    assert steps.subject_after_first == subject(run, 1, steps.selected, "retry", "skipped")


def test_an_agent_error_reaches_the_next_attempt_through_history_md(
    agent_error: tuple[TwoSteps, dict[str, Any], str],
) -> None:
    steps, _, _ = agent_error
    message = agent_error_message(steps)

    seen = steps.project.record(2)

    assert steps.state_after_first["last_summary"] == message
    assert seen["env"]["RUNNER_NODE_ID"] == steps.selected
    assert seen["context"]["history.md"] == message + "\n"
    assert message in seen["prompt"]


def test_an_executor_setting_passes_and_attempts_is_simply_overruled(project: Project) -> None:
    run = project.prepare(TWO_OPEN)
    project.agent_script(
        {
            1: {
                "tree_ops": [
                    ["set", "root.1", "passes", True],
                    ["set", "root.1", "attempts", 2],
                    ["set", "root.2", "passes", True],
                    ["set", "root.2", "attempts", 3],
                    ["set", "root.2", "title", "Retitled by the agent"],
                ],
                "output": {"status": "retry", "summary": "marked myself done"},
            }
        }
    )

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"step: run={run} iter=1 node=root.1 status=retry guard=skipped"
    ]
    tree = project.tree()
    first, second = find_node(tree, "root.1"), find_node(tree, "root.2")
    assert (first["passes"], first["attempts"]) == (False, 1)
    assert (second["passes"], second["attempts"]) == (False, 0)
    assert second["title"] == "Retitled by the agent"
    assert tree["passes"] is False
    assert not (project.iter_dir(1) / "agent_error.log").exists()
    assert project.run_state()["last_summary"] == "marked myself done"


@pytest.mark.parametrize(
    "tampering",
    [{"delete": [".runner/state/config.toml"]}, {"files": {".runner/state/config.toml": "x = 1"}}],
    ids=["deleted", "rewritten"],
)
def test_an_agent_cannot_change_config_toml(project: Project, tampering: dict[str, Any]) -> None:
    run = project.prepare(LEAF)
    config = project.config_path.read_bytes()
    project.agent_script({1: {**tampering, "output": {"status": "retry", "summary": "tidied"}}})

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=retry guard=skipped"]
    assert project.config_path.read_bytes() == config
    assert project.status() == ""


def test_a_missing_agent_program_is_refused_before_an_iteration(project: Project) -> None:
    project.prepare(LEAF, agent_command=["/nonexistent/agent"])
    status, head, files = project.status(), project.head(), project.snapshot()

    result = project.runner("step")

    assert assert_one_error_line(result) == (
        "agent.command: program '/nonexistent/agent' does not exist; "
        "install it or fix agent.command in .runner/state/config.toml"
    )
    assert (project.status(), project.head(), project.snapshot()) == (status, head, files)


@pytest.mark.parametrize("backend", ["gemini", "qwen", "opencode"])
def test_validate_names_a_missing_backend_cli_with_its_install_command(
    project: Project, backend: str
) -> None:
    project.prepare(LEAF)
    text = project.config_path.read_text(encoding="utf-8")
    agent_table = text.index("\n[agent]\n")
    project.config_path.write_text(
        text[:agent_table] + f'\n[agent]\nbackend = "{backend}"\n', encoding="utf-8"
    )
    project.commit_setup()
    # A PATH with git and python but no agent CLI.
    bin_dir = project.root.parent / "bin-without-agents"
    bin_dir.mkdir()
    for program in ("git", "python3"):
        found = shutil.which(program)
        assert found is not None
        (bin_dir / program).symlink_to(found)
    project.env["PATH"] = str(bin_dir)

    result = project.runner("validate")

    install = BACKENDS[backend].install
    assert install.startswith("npm install -g ") and PINNED[backend] in install
    assert assert_one_error_line(result).endswith(
        f"; install it with `{install}` or fix agent.command in .runner/state/config.toml"
    )
    assert f"'{backend}'" in result.stderr
