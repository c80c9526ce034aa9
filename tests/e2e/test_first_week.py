"""End-to-end specification of what a new user meets in a first week with runner.

Each test pins one defect a first week turned up: a command that lost work, a path an agent
could not use, a placeholder that cost a paid session, a message that did not lead to the fix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers import SCHEMAS
from tests.helpers.e2e import PYTHON, Project, assert_one_error_line, node


def run_cli(
    project: Project, *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The real CLI as a subprocess in `cwd` (the project's root by default)."""
    return subprocess.run(
        [PYTHON, "-m", "runner_shell", *args],
        cwd=cwd or project.root,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# ---------------------------------------------------------------- demo --dir


def test_demo_refuses_a_directory_that_is_not_empty_and_changes_nothing(
    fresh_project: Project,
) -> None:
    project = fresh_project
    project.git("checkout", "--quiet", "-b", "feature")
    (project.root / "feature.py").write_text("FEATURE = 1\n", encoding="utf-8")
    project.commit_setup("feature work")
    (project.root / "README.md").write_text("# edited, not committed\n", encoding="utf-8")
    (project.root / "wip.txt").write_text("work in progress\n", encoding="utf-8")
    files_before = project.snapshot()
    git_before = [project.git("status", "--porcelain=v2", "--branch"), project.git("log", "--all")]
    refs_before = project.git("for-each-ref")

    result = run_cli(project, "demo", "--dir", str(project.root), cwd=project.root.parent)

    line = assert_one_error_line(result)
    assert str(project.root) in line
    assert "empty" in line and "--dir" in line
    assert result.stdout == ""
    assert project.snapshot() == files_before
    assert [project.git("status", "--porcelain=v2", "--branch"), project.git("log", "--all")] == (
        git_before
    )
    assert project.git("for-each-ref") == refs_before
    assert project.git("symbolic-ref", "HEAD").strip() == "refs/heads/feature"


def test_demo_refuses_a_directory_holding_only_a_file(
    tmp_path: Path, fresh_project: Project
) -> None:
    target = tmp_path / "notes"
    target.mkdir()
    (target / "todo.txt").write_text("keep me\n", encoding="utf-8")

    result = run_cli(fresh_project, "demo", "--dir", str(target), cwd=tmp_path)

    assert str(target) in assert_one_error_line(result)
    assert sorted(path.name for path in target.iterdir()) == ["todo.txt"]


# ---------------------------------------------------------------- relative directories


def test_demo_with_a_relative_dir_completes_and_is_inspected_with_dash_c(
    tmp_path: Path, fresh_project: Project
) -> None:
    """The README's `runner demo --dir d && runner -C d status`: the agent is handed absolute
    paths, so a relative --dir works like any other."""
    demo = run_cli(fresh_project, "demo", "--dir", "d", cwd=tmp_path, timeout=60)

    assert demo.returncode == 0, (demo.stdout, demo.stderr)
    assert "loop: status=complete" in demo.stdout
    status = run_cli(fresh_project, "-C", "d", "status", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "completed" in status.stdout


# ---------------------------------------------------------------- the placeholder goal

PLACEHOLDER_HINT = "edit .runner/GOAL.md"


def test_start_refuses_the_placeholder_goal_md(fresh_project: Project) -> None:
    project = fresh_project
    assert project.runner("init", "--backend", "command", "--agent", "true").returncode == 0

    line = assert_one_error_line(project.runner("start"))

    assert line.startswith(".runner/GOAL.md ") and PLACEHOLDER_HINT in line
    assert project.git("symbolic-ref", "--short", "HEAD").strip() == "main"


def test_step_refuses_the_placeholder_goal_md(project: Project) -> None:
    from runner_core.run.identity import GOAL_PLACEHOLDER, with_run_id

    project.goal_path.write_text(with_run_id(GOAL_PLACEHOLDER, project.run_id), encoding="utf-8")
    project.commit_setup("back to the placeholder")
    project.agent_script({1: {"output": {"status": "done", "summary": "Did it."}}})

    line = assert_one_error_line(project.runner("step"))

    assert PLACEHOLDER_HINT in line
    assert not (project.harness / "records").exists()


# ---------------------------------------------------------------- back on main after a run

DONE = {"status": "done", "summary": "Did it."}


def back_on_main_after_a_step(project: Project) -> str:
    run = project.prepare(node("root"))
    project.agent_script({1: {"output": DONE}})
    assert project.runner("step").returncode == 0
    project.git("checkout", "--quiet", "main")
    assert (project.runner_dir / "iterations" / run).is_dir()
    return run


def test_git_status_on_main_is_clean_of_the_runners_own_files(project: Project) -> None:
    back_on_main_after_a_step(project)

    assert project.status() == ""


def test_step_on_main_works_on_the_run_not_the_ignored_files(project: Project) -> None:
    # This rule changed: from main, a step works on the run in its own checkout
    # (inside .git/runner/) instead of naming the branch to check out.
    run = back_on_main_after_a_step(project)

    result = project.runner("step")

    assert "not clean" not in result.stderr
    assert result.returncode == 2, result.stderr  # the run is complete
    assert result.stdout == "step: status=complete\n"
    assert (project.root / ".git/runner/runs" / run / "checkout/.runner").is_dir()
    assert project.git("branch", "--show-current").strip() == "main"


def test_status_on_main_shows_the_run(project: Project) -> None:
    run = back_on_main_after_a_step(project)

    result = project.runner("status")

    assert result.returncode == 0, result.stderr
    assert "runner init" not in result.stdout + result.stderr
    assert f"run={run}" in result.stdout
    assert project.git("branch", "--show-current").strip() == "main"


# ---------------------------------------------------------------- a reader that goes away


def run_into_a_closed_pipe(project: Project, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI with stdout a pipe whose reader is already gone, as in `runner status | head -0`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [PYTHON, "-m", "runner_shell", *args],
            cwd=project.root,
            env=project.env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [("status",), ("status", "--json"), ("history",), ("runs",), ("select",), ("validate",)],
    ids=" ".join,
)
def test_a_closed_stdout_ends_the_command_quietly_like_git(
    project: Project, args: tuple[str, ...]
) -> None:
    project.prepare(node("root"))

    result = run_into_a_closed_pipe(project, *args)

    assert result.stderr == b""
    assert result.returncode == 141


# ---------------------------------------------------------------- node replace --from


def test_node_replace_names_the_fields_a_plan_lacks(tmp_path: Path, project: Project) -> None:
    project.prepare(node("root"))
    plan = tmp_path / "plan.json"
    plan.write_text('{"title": "x"}', encoding="utf-8")

    line = assert_one_error_line(project.runner("node", "replace", "root", "--from", str(plan)))

    assert line.startswith("node replace: --from lacks the required field(s) goal, acceptance")


# ---------------------------------------------------------------- help texts


def test_follow_json_help_says_json_lines(fresh_project: Project) -> None:
    result = fresh_project.runner("follow", "--help")

    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.split())
    assert "JSON Lines (each event as one JSON object per line" in help_text


# ---------------------------------------------------------------- validate --json


def validate_schema() -> dict[str, Any]:
    path = SCHEMAS / "views" / "validate.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_validate_json_prints_its_document_when_a_check_fails(project: Project) -> None:
    project.prepare(node("root"))
    project.config_path.write_text("max_iterations = 'many'\n", encoding="utf-8")

    result = project.runner("validate", "--json")

    message = assert_one_error_line(result)
    document = json.loads(result.stdout)
    jsonschema.validate(document, validate_schema(), cls=jsonschema.Draft202012Validator)
    assert document == {
        "layout": "ok",
        "config": "failed",
        "tree": None,
        "run": None,
        "id": None,
        "branch": None,
        "sandbox": None,
        **dict.fromkeys(("userns", "caps", "seccomp", "fs", "env", "net", "limits")),
        "error": message,
    }


# ---------------------------------------------------------------- the limit after an error


def test_a_runner_error_on_the_last_iteration_ends_at_the_limit_at_once_with_on_limit(
    project: Project,
) -> None:
    heard = project.harness / "on_limit.jsonl"
    hook = [PYTHON, "-c", "import sys; open(sys.argv[1], 'a').write(sys.stdin.read())", str(heard)]
    run = project.prepare(
        node("root"),
        max_iterations=1,
        loop={"runner_error_backoff_secs": [60], "max_wait_secs": 60},
        hooks={"on_limit": hook},
    )
    project.agent_script({1: {"exit": 5}})

    result = project.runner("loop", timeout=45)

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"loop: step run={run} iter=1 node=root status=runner_error guard=skipped",
        f"loop: status=limit run={run} next_iter=2 max_iterations=1 steps=1 started_at_iter=1",
    ]
    fired = [json.loads(line) for line in heard.read_text(encoding="utf-8").splitlines()]
    assert [(event["type"], event["kind"]) for event in fired] == [("limit_reached", "iterations")]
    events_log = project.runner_dir / "iterations" / run / "events.jsonl"
    recorded = [json.loads(line) for line in events_log.read_text(encoding="utf-8").splitlines()]
    assert [event["type"] for event in recorded][-2:] == ["runner_error", "limit_reached"]


# ---------------------------------------------------------------- small things that mislead


def test_start_on_a_started_run_says_it_is_already_started(project: Project) -> None:
    run = project.prepare(node("root"))
    head = project.head()

    result = project.runner("start")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"already started run={run} branch=runner/{run}"]
    assert project.head() == head


def test_diff_prints_json_booleans(project: Project) -> None:
    project.prepare(node("root"))
    project.agent_script({1: {"output": DONE}})
    assert project.runner("step").returncode == 0

    result = project.runner("diff", "1")

    assert result.returncode == 0, result.stderr
    assert "  root passes: false -> true" in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        pytest.param(("show",), "Usage: runner show [OPTIONS] ITER", id="show"),
        pytest.param(("diff",), "Usage: runner diff [OPTIONS] ITER", id="diff"),
        pytest.param(("tell",), "Usage: runner tell [OPTIONS] [TEXT]", id="tell"),
        pytest.param(("node", "retry"), "Usage: runner node retry [OPTIONS] ID", id="node retry"),
    ],
)
def test_usage_lines_show_plain_metavariables(
    fresh_project: Project, command: tuple[str, ...], usage: str
) -> None:
    result = fresh_project.runner(*command, "--help")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == usage


def test_the_help_lists_every_command_without_cutting_its_summary(fresh_project: Project) -> None:
    result = fresh_project.runner("--help")

    assert result.returncode == 0, result.stderr
    commands = result.stdout.split("Commands:\n", 1)[1]
    assert "..." not in commands
    assert "Scaffold .runner/ with a default config, a placeholder GOAL.md and a root node." in (
        " ".join(commands.split())
    )


def test_status_shows_the_agents_questions_while_no_leaf_is_stuck(project: Project) -> None:
    project.prepare(node("root"))
    questions = project.runner_dir / "state" / "questions.md"
    questions.write_text(questions.read_text(encoding="utf-8") + "- Which database?\n")
    project.commit_setup("a question")

    document = json.loads(project.runner("status", "--json").stdout)

    assert document["questions"] == "- Which database?\n"
    assert "  - Which database?" in project.runner("status").stdout.splitlines()


# ---------------------------------------------------------------- serve --port 0


def test_serve_on_port_0_binds_a_free_port_and_prints_it(project: Project) -> None:
    from tests.helpers.serve import serve_process, wait_until_answering

    project.prepare(node("root"))
    process = serve_process(project, "--port", "0")
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        match = re.fullmatch(
            r"serve: http://127\.0\.0\.1:(\d+)/ \(read-only; Ctrl-C stops\)\n", first
        )
        assert match is not None, (first, process.stderr.read() if process.poll() else "")
        port = int(match.group(1))
        assert port != 0
        wait_until_answering(process, f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        process.wait(timeout=10)
