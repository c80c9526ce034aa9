"""End-to-end specification of `runner init/start/validate/select/step`.

Every test runs the real CLI in a subprocess on a real git repository and pins the exact output
lines and exit codes a user sees.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.e2e import (
    PYTHON,
    START_HINT,
    Project,
    assert_one_error_line,
    canonical_tree_text,
    child_spec,
    find_node,
    lines,
    node,
)

# The sandbox the agent gets on this machine, as validate says it.
# The e2e configs say `[sandbox] mode = "off"` (tests/helpers/e2e.py).
# What validate says of the sandbox in the e2e configs (mode = "off"): each layer.
SANDBOX = "off userns=no caps=host seccomp=no fs=host env=listed net=host limits=none"
INIT_LINE = "initialized .runner/ (edit .runner/GOAL.md, then run 'runner start')"
STATE_FILES = (
    "tree.json",
    "schema.json",
    "config.toml",
    "run_state.json",
    "assumptions.md",
    "questions.md",
    "decomposer_output.schema.json",
    "executor_output.schema.json",
)


def head_sha8(project: Project) -> str:
    return project.head()[:8]


# ---------------------------------------------------------------- init


def test_init_creates_the_files_of_the_runner_layout(fresh_project: Project) -> None:
    result = fresh_project.runner("init")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [INIT_LINE]
    runner_dir = fresh_project.runner_dir
    assert (runner_dir / "GOAL.md").is_file()
    assert {"context/", "iterations/"} <= set(lines((runner_dir / ".gitignore").read_text()))
    for name in STATE_FILES:
        assert (runner_dir / "state" / name).is_file(), name
    assert fresh_project.run_state() == {
        "run_id": None,
        "next_iter": 1,
        "last_status": None,
        "last_summary": "",
        "last_guard": None,
    }
    tree_text = fresh_project.tree_path.read_text(encoding="utf-8")
    assert tree_text == canonical_tree_text(json.loads(tree_text))
    assert fresh_project.tree()["id"] == "root"
    assert fresh_project.tree()["next"] == "decompose"


def test_init_refuses_to_overwrite_an_existing_runner_dir(fresh_project: Project) -> None:
    assert fresh_project.runner("init").returncode == 0
    fresh_project.tree_path.write_text("edited\n", encoding="utf-8")

    result = fresh_project.runner("init")

    message = assert_one_error_line(result)
    assert message == (
        ".runner already exists; use 'runner init --force' to overwrite its state files"
    )
    assert fresh_project.tree_path.read_text(encoding="utf-8") == "edited\n"


def test_init_force_overwrites_state_files_and_keeps_the_goal(fresh_project: Project) -> None:
    assert fresh_project.runner("init").returncode == 0
    pristine_tree = fresh_project.tree_path.read_bytes()
    pristine_config = fresh_project.config_path.read_bytes()
    fresh_project.tree_path.write_text("edited\n", encoding="utf-8")
    fresh_project.config_path.write_text("max_iterations = 0\n", encoding="utf-8")
    fresh_project.goal_path.write_text("# Goal\n\nShip it.\n", encoding="utf-8")

    result = fresh_project.runner("init", "--force")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [INIT_LINE]
    assert fresh_project.tree_path.read_bytes() == pristine_tree
    assert fresh_project.config_path.read_bytes() == pristine_config
    assert fresh_project.goal_path.read_text(encoding="utf-8") == "# Goal\n\nShip it.\n"


def test_init_options_set_the_guard_backend_and_agent(fresh_project: Project) -> None:
    result = fresh_project.runner(
        "init",
        *("--guard", "make", "--guard", "check"),
        *("--backend", "command"),
        *("--agent", PYTHON, "--agent", "agent.py"),
    )

    assert result.returncode == 0, result.stderr
    config = tomllib.loads(fresh_project.config_path.read_text(encoding="utf-8"))
    judging = {"mode": "exit", "rerun_failures": 1, "protected": [], "require_targets": False}
    assert config["guard"] == {"command": ["make", "check"], "network": False, **judging}
    assert config["agent"] == {"backend": "command", "command": [PYTHON, "agent.py"]}


def test_init_with_an_agent_command_and_no_backend_is_a_command_agent(
    fresh_project: Project,
) -> None:
    result = fresh_project.runner("init", "--agent", f"{PYTHON} agent.py")

    assert result.returncode == 0, result.stderr
    config = tomllib.loads(fresh_project.config_path.read_text(encoding="utf-8"))
    assert config["agent"] == {"backend": "command", "command": [PYTHON, "agent.py"]}


def test_init_defaults_to_codex_and_just_ci(fresh_project: Project) -> None:
    assert fresh_project.runner("init").returncode == 0

    config = tomllib.loads(fresh_project.config_path.read_text(encoding="utf-8"))

    judging = {"mode": "exit", "rerun_failures": 1, "protected": [], "require_targets": False}
    assert config["guard"] == {"command": ["just", "ci"], "network": False, **judging}
    assert config["agent"] == {"backend": "codex", "command": []}


# ---------------------------------------------------------------- start


def started_run_id(project: Project) -> str:
    result = project.runner("start", "--here")
    assert result.returncode == 0, result.stderr
    return project.run_id


def test_start_creates_the_run_branch_named_after_head(unstarted_project: Project) -> None:
    project = unstarted_project
    run_id = f"run-{head_sha8(project)}"

    # `--here`: the run in this checkout (the default, its own: test_beside_checkout).
    result = project.runner("start", "--here")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"started run={run_id} branch=runner/{run_id}"]
    assert project.git("symbolic-ref", "--short", "HEAD").strip() == f"runner/{run_id}"
    assert project.subjects()[-1] == f"chore(loop): start run {run_id}"
    assert project.run_state()["run_id"] == run_id
    assert project.goal_path.read_text(encoding="utf-8").startswith(f"---\nid: {run_id}\n---\n")
    assert project.status() == ""


def test_start_adds_a_suffix_when_the_run_id_is_taken(unstarted_project: Project) -> None:
    project = unstarted_project
    sha8 = head_sha8(project)
    project.git("branch", f"runner/run-{sha8}")

    # Beside an existing run, a plain `start` on main refuses: `--new` is the way.
    result = project.runner("start", "--new", "--here")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"started run=run-{sha8}-2 branch=runner/run-{sha8}-2"]
    assert project.run_id == f"run-{sha8}-2"


def test_start_keeps_the_other_frontmatter_keys_of_goal_md(unstarted_project: Project) -> None:
    project = unstarted_project
    project.goal_path.write_text(
        "---\ntitle: Calculator\nowner: alice\n---\n# Goal\n\nAdd numbers.\n", encoding="utf-8"
    )

    run_id = started_run_id(project)

    text = project.goal_path.read_text(encoding="utf-8")
    frontmatter, body = text.removeprefix("---\n").split("---\n", 1)
    assert sorted(lines(frontmatter)) == [f"id: {run_id}", "owner: alice", "title: Calculator"]
    assert body == "# Goal\n\nAdd numbers.\n"


def test_start_again_on_the_run_branch_makes_no_commit(project: Project) -> None:
    head = project.head()

    result = project.runner("start")

    assert result.returncode == 0, result.stderr
    run = project.run_id
    assert lines(result.stdout) == [f"already started run={run} branch=runner/{run}"]
    assert project.head() == head


def test_start_refuses_a_dirty_working_tree(unstarted_project: Project) -> None:
    project = unstarted_project
    (project.root / "README.md").write_text("changed\n", encoding="utf-8")

    # Only a start that switches this checkout needs it clean (`--here`).
    result = project.runner("start", "--here")

    assert assert_one_error_line(result) == (
        "working tree is not clean: README.md; commit, stash or discard these changes first"
    )
    assert project.git("symbolic-ref", "--short", "HEAD").strip() == "main"


# ---------------------------------------------------------------- validate


def test_validate_prints_its_ok_lines_and_the_sandbox_before_a_run_is_started(
    unstarted_project: Project,
) -> None:
    result = unstarted_project.runner("validate")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        "validate: layout=ok",
        "validate: config=ok",
        "validate: tree=ok",
        "validate: run=not-started",
        f"validate: sandbox={SANDBOX}",
    ]


def test_validate_reports_the_run_identity_once_started(project: Project) -> None:
    result = project.runner("validate")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        "validate: layout=ok",
        "validate: config=ok",
        "validate: tree=ok",
        f"validate: run=ok id={project.run_id} branch=runner/{project.run_id}",
        f"validate: sandbox={SANDBOX}",
    ]


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        ("max_iterations = \n", ".runner/state/config.toml is not valid TOML: "),
        ("colour = 1\n", ".runner/state/config.toml: colour: unknown key"),
        ("max_iterations = 0\n", ".runner/state/config.toml: max_iterations: must be > 0, got 0"),
    ],
    ids=["not-toml", "unknown-key", "bad-value"],
)
def test_validate_names_the_config_file_on_a_bad_config(
    project: Project, config_text: str, expected: str
) -> None:
    project.config_path.write_text(config_text, encoding="utf-8")

    result = project.runner("validate")

    message = assert_one_error_line(result)
    assert message.startswith(expected), message
    assert lines(result.stdout) == ["validate: layout=ok"]


@pytest.mark.parametrize(
    ("tree_text", "expected"),
    [
        ("{not json", "tree is not valid JSON: "),
        ('{"id": "root"}', "tree schema validation failed: $ must contain 'acceptance'"),
        (
            json.dumps(node("root", children=[node("a"), node("a", order=1)])),
            "tree invariants failed: duplicate id 'a' at ",
        ),
    ],
    ids=["not-json", "schema", "invariants"],
)
def test_validate_names_the_tree_file_on_a_bad_tree(
    project: Project, tree_text: str, expected: str
) -> None:
    project.tree_path.write_text(tree_text, encoding="utf-8")

    result = project.runner("validate")

    message = assert_one_error_line(result)
    assert message.startswith(".runner/state/tree.json: " + expected), message
    assert lines(result.stdout) == ["validate: layout=ok", "validate: config=ok"]


# ---------------------------------------------------------------- select

NESTED_TREE = node(
    "root",
    next_="decompose",
    children=[
        node("root.1", passes=True),
        node(
            "root.2",
            order=1,
            next_="decompose",
            children=[node("root.2.1", attempts=1, max_attempts=2)],
        ),
    ],
)


@pytest.mark.parametrize(
    ("tree", "code", "line"),
    [
        (NESTED_TREE, 0, "select: status=open id=root.2.1 path=root/root.2/root.2.1 attempts=1/2"),
        (node("root", passes=True), 2, "select: status=complete"),
        (
            node("root", attempts=2, max_attempts=2),
            3,
            "select: status=stuck id=root path=root attempts=2/2",
        ),
    ],
    ids=["open", "complete", "stuck"],
)
def test_select_prints_the_next_leaf_and_exits_with_its_status(
    project: Project, tree: dict[str, object], code: int, line: str
) -> None:
    project.write_tree(tree)

    result = project.runner("select")

    assert result.returncode == code, result.stderr
    assert lines(result.stdout) == [line]
    assert result.stderr == ""


# ---------------------------------------------------------------- step


def test_step_prints_the_step_line(project: Project) -> None:
    project.agent_script({1: {"output": {"summary": "split", "children": [child_spec("A")]}}})

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"step: run={project.run_id} iter=1 node=root status=decomposed guard=skipped"
    ]
    assert [child["id"] for child in project.tree()["children"]] == ["root.1"]
    assert project.status() == ""


def test_step_on_a_complete_tree_prints_complete_and_exits_2(project: Project) -> None:
    project.prepare(node("root", passes=True))
    head = project.head()

    result = project.runner("step")

    assert result.returncode == 2, result.stderr
    assert lines(result.stdout) == ["step: status=complete"]
    assert project.head() == head


def test_step_on_a_stuck_leaf_stops_with_exit_3(project: Project) -> None:
    project.prepare(node("root", attempts=2, max_attempts=2))
    head = project.head()

    result = project.runner("step")

    message = assert_one_error_line(result, 3)
    assert message.startswith("stuck: leaf 'root' (root) used 2/2 attempts; "), message
    assert result.stdout == ""
    assert project.head() == head


def test_step_past_max_iterations_is_an_error(project: Project) -> None:
    project.prepare(node("root", max_attempts=5), max_iterations=1)
    project.agent_script({1: {"output": {"status": "retry", "summary": "not yet"}}})
    assert project.runner("step").returncode == 0
    head = project.head()

    result = project.runner("step")

    message = assert_one_error_line(result)
    assert message.startswith("iteration limit reached: next_iter 2 > max_iterations 1"), message
    assert project.head() == head


def test_iteration_commit_succeeds_without_any_git_identity(project: Project) -> None:
    run_id = project.prepare(node("root"))
    project.agent_script({1: {"output": {"status": "retry", "summary": "not yet"}}})
    assert list(Path(project.env["HOME"]).iterdir()) == []
    for key in ("user.name", "user.email"):
        assert project.git_config(key) is None, f"{key} must not be configured"

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert project.subjects()[-1] == (
        f"chore(loop): run {run_id} iter 1 node root status=retry guard=skipped"
    )
    assert project.status() == ""


# ---------------------------------------------------------------- preconditions


def on_main(project: Project) -> str:
    project.git("checkout", "--quiet", "-B", "main")
    # The run branch exists: the refusal names it instead of 'runner start'.
    run = project.run_id
    return (
        f"refusing to run on branch 'main': run(s) {run} exist: 'git checkout runner/{run}' "
        "to continue it, or 'runner start --new' for a new run"
    )


def dirty(project: Project) -> str:
    (project.root / "README.md").write_text("modified\n", encoding="utf-8")
    (project.root / "new.txt").write_text("untracked\n", encoding="utf-8")
    return (
        "working tree is not clean: README.md, new.txt; "
        "commit, stash or discard these changes first"
    )


def goal_id_differs(project: Project) -> str:
    text = project.goal_path.read_text(encoding="utf-8")
    project.goal_path.write_text(text.replace(project.run_id, "run-other"), encoding="utf-8")
    project.commit_setup("edit the goal id")
    return (
        f"run_state.json run_id '{project.run_id}' does not match GOAL.md id 'run-other' "
        f"{START_HINT}"
    )


def wrong_branch(project: Project) -> str:
    project.git("checkout", "--quiet", "-b", "feature")
    run_id = project.run_id
    return f"on branch 'feature' but run '{run_id}' runs on 'runner/{run_id}' {START_HINT}"


def gitignore_lacks_a_line(project: Project) -> str:
    (project.runner_dir / ".gitignore").write_text("context/\n", encoding="utf-8")
    project.commit_setup("drop a gitignore line")
    return f".runner/.gitignore lacks the line(s) iterations/ {START_HINT}"


@pytest.mark.parametrize(
    "break_precondition",
    [dirty, goal_id_differs, gitignore_lacks_a_line],
    ids=["dirty", "goal-id-differs", "gitignore-line-missing"],
)
def test_step_refuses_to_run_when_a_precondition_fails(
    project: Project, break_precondition: Callable[[Project], str]
) -> None:
    project.agent_script({1: {"output": {"summary": "s", "children": [child_spec("A")]}}})
    expected = break_precondition(project)
    status, head, files = project.status(), project.head(), project.snapshot()

    result = project.runner("step")

    assert assert_one_error_line(result) == expected
    assert result.stdout == ""
    assert (project.status(), project.head()) == (status, head)
    assert project.snapshot() == files
    assert not (project.harness / "records").exists(), "the agent must not run"


@pytest.mark.parametrize("leave", [on_main, wrong_branch], ids=["on-main", "wrong-branch"])
def test_step_from_another_branch_works_on_the_run(
    project: Project, leave: Callable[[Project], str]
) -> None:
    # This rule changed (these two used to refuse): from any branch of the user's
    # checkout a step works on the run in its own checkout, and leaves theirs as it was.
    project.agent_script({1: {"output": {"summary": "s", "children": [child_spec("A")]}}})
    run = project.run_id
    leave(project)
    status, head, files = project.status(), project.head(), project.snapshot()

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"step: run={run} iter=1 node=root status=decomposed guard=skipped"
    ]
    assert (project.status(), project.head()) == (status, head)
    assert project.snapshot() == files


def test_step_before_runner_start_says_to_run_it(unstarted_project: Project) -> None:
    unstarted_project.commit_setup("track .runner on main")

    result = unstarted_project.runner("step")

    assert assert_one_error_line(result) == f"refusing to run on branch 'main' {START_HINT}"


@pytest.mark.parametrize("detach", [False, True], ids=["main", "detached"])
def test_a_dirty_tree_off_a_run_branch_without_runner_files_is_reported_as_dirty(
    fresh_project: Project, detach: bool
) -> None:
    if detach:
        fresh_project.git("checkout", "--quiet", "--detach")
    (fresh_project.root / "README.md").write_text("modified\n", encoding="utf-8")

    result = fresh_project.runner("step")

    # Not "config.toml is missing (run 'runner init')": the way on is not `runner init`.
    assert assert_one_error_line(result) == (
        "working tree is not clean: README.md; commit, stash or discard these changes first"
    )


def test_loop_refuses_to_run_on_a_dirty_tree_too(project: Project) -> None:
    expected = dirty(project)

    result = project.runner("loop")

    assert assert_one_error_line(result) == expected
    assert find_node(project.tree(), "root")["attempts"] == 0


@pytest.mark.parametrize(
    "move",
    [("checkout", "--quiet", "--detach"), ("checkout", "--quiet", "-b", "master")],
    ids=["detached", "master"],
)
def test_validate_and_step_say_the_same_about_the_run_identity(
    project: Project, move: tuple[str, ...]
) -> None:
    # This rule changed (both used to refuse alike): from a detached HEAD or another
    # branch, validate and step both work on the run in its own checkout.
    project.prepare()
    run = project.run_id
    project.git(*move)
    project.agent_script({1: {"output": {"summary": "s", "children": [child_spec("A")]}}})

    validate = project.runner("validate")
    step = project.runner("step")

    assert validate.returncode == 0, validate.stderr
    assert step.returncode == 0, step.stderr
    assert f"run={run}" in validate.stdout + step.stdout
