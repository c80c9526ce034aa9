"""End-to-end specification of the operator's node commands ("Operating a run").

A stuck leaf has four ways out, each one command and one commit: `runner node retry`,
`decompose`, `replace` and `skip`. After each, `runner loop` goes on to completion. Passed
nodes are refused; every command leaves a commit whose trailers say who did what.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.e2e import Project, assert_one_error_line, child_spec, find_node, lines, node

DONE = {"status": "done", "summary": "Did it."}
STUCK_HINT_COMMANDS = "runner node retry|decompose|replace|skip"


def stuck_project(project: Project) -> str:
    """A run whose only open leaf root.2 has used its one attempt; root.1 has passed."""
    tree = node(
        "root",
        next_="decompose",
        children=[
            node("root.1", order=0, passes=True),
            node("root.2", order=1, attempts=1, max_attempts=1),
        ],
    )
    return project.prepare(tree)


def last_message(project: Project) -> str:
    return project.git("log", "-1", "--format=%B")


def test_loop_at_a_stuck_leaf_names_the_node_commands(project: Project) -> None:
    run = stuck_project(project)
    result = project.runner("loop")
    assert result.returncode == 3
    assert lines(result.stdout) == [
        f"loop: status=stuck run={run} id=root.2 path=root/root.2 attempts=1/1"
    ]
    assert STUCK_HINT_COMMANDS in assert_one_error_line(result, 3)


def test_step_at_a_stuck_leaf_names_the_node_commands(project: Project) -> None:
    stuck_project(project)
    result = project.runner("step")
    message = assert_one_error_line(result, 3)
    assert message.startswith("stuck: leaf 'root.2' (root/root.2) used 1/1 attempts;")
    assert STUCK_HINT_COMMANDS in message


def test_retry_gives_more_attempts_and_the_loop_completes(project: Project) -> None:
    run = stuck_project(project)
    result = project.runner("node", "retry", "root.2", "--attempts", "2")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"node: op=retry id=root.2 run={run} next=execute attempts=1/3 children=none"
    ]
    assert project.subjects()[-1] == f"chore(runner): node retry root.2 run {run}"
    message = last_message(project)
    for trailer in (
        f"Runner-Run: {run}",
        "Runner-Op: retry",
        "Runner-Node: root.2",
        "Runner-Actor: runner <runner@localhost>",
        "Runner-Next-Iter: 1",
    ):
        assert trailer in lines(message)
    assert project.status() == ""
    project.agent_script({1: {"output": DONE}})
    loop = project.runner("loop")
    assert loop.returncode == 0, loop.stderr
    assert lines(loop.stdout)[-1].startswith(f"loop: status=complete run={run} steps=1")


def test_retry_without_attempts_adds_max_attempts_default(project: Project) -> None:
    run = stuck_project(project)
    result = project.runner("node", "retry", "root.2")
    assert lines(result.stdout) == [
        f"node: op=retry id=root.2 run={run} next=execute attempts=1/4 children=none"
    ]


def test_retry_names_the_configured_git_user_as_actor(project: Project) -> None:
    stuck_project(project)
    project.git("config", "user.name", "Ada Operator")
    project.git("config", "user.email", "ada@example.invalid")
    assert project.runner("node", "retry", "root.2").returncode == 0
    assert "Runner-Actor: Ada Operator <ada@example.invalid>" in lines(last_message(project))


def test_decompose_without_a_file_lets_the_decomposer_run_next(project: Project) -> None:
    run = stuck_project(project)
    result = project.runner("node", "decompose", "root.2")
    assert lines(result.stdout) == [
        f"node: op=decompose id=root.2 run={run} next=decompose attempts=1/2 children=none"
    ]
    project.agent_script(
        {
            1: {"output": {"summary": "Split.", "children": [child_spec("Half")]}},
            2: {"output": DONE},
        }
    )
    loop = project.runner("loop")
    assert loop.returncode == 0, loop.stderr
    assert lines(loop.stdout)[0] == (
        f"loop: step run={run} iter=1 node=root.2 status=decomposed guard=skipped"
    )
    assert find_node(project.tree(), "root.2.1")["passes"] is True


def test_decompose_from_a_file_adds_the_children_now(project: Project, tmp_path: Path) -> None:
    run = stuck_project(project)
    plan = tmp_path / "children.json"
    plan.write_text(
        json.dumps({"summary": "By hand.", "children": [child_spec("A"), child_spec("B")]})
    )
    result = project.runner("node", "decompose", "root.2", "--from", str(plan))
    assert lines(result.stdout) == [
        f"node: op=decompose id=root.2 run={run} next=execute attempts=1/1 "
        "children=root.2.1,root.2.2"
    ]
    assert find_node(project.tree(), "root.2.1")["title"] == "A"
    project.agent_script({1: {"output": DONE}, 2: {"output": DONE}})
    loop = project.runner("loop")
    assert loop.returncode == 0, loop.stderr
    assert [line.split()[4] for line in lines(loop.stdout)[:2]] == [
        "node=root.2.1",
        "node=root.2.2",
    ]


def test_replace_gives_a_new_plan_with_no_attempts_used(project: Project, tmp_path: Path) -> None:
    run = stuck_project(project)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"title": "Smaller", "goal": "Do less.", "acceptance": ["less"], "next": "execute"}
        )
    )
    result = project.runner("node", "replace", "root.2", "--from", str(plan))
    assert lines(result.stdout) == [
        f"node: op=replace id=root.2 run={run} next=execute attempts=0/1 children=none"
    ]
    replaced = find_node(project.tree(), "root.2")
    assert (replaced["title"], replaced["goal"], replaced["acceptance"]) == (
        "Smaller",
        "Do less.",
        ["less"],
    )
    project.agent_script({1: {"output": DONE}})
    assert project.runner("loop").returncode == 0


def test_skip_removes_the_node_and_completes_its_parent(project: Project) -> None:
    run = stuck_project(project)
    result = project.runner("node", "skip", "root.2")
    assert lines(result.stdout) == [f"node: op=skip id=root.2 run={run} removed=1"]
    tree = project.tree()
    assert [child["id"] for child in tree["children"]] == ["root.1"]
    assert tree["passes"] is True
    loop = project.runner("loop")
    assert loop.returncode == 0
    assert lines(loop.stdout) == [f"loop: status=complete run={run} steps=0 started_at_iter=1"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("retry", "root.1"), "node retry: node 'root.1' has passed; passed nodes never change"),
        (("skip", "root.1"), "node skip: node 'root.1' has passed; passed nodes never change"),
        (("skip", "root"), "node skip: the root cannot be skipped (replace it instead)"),
        (("retry", "nope"), "node retry: no node 'nope' in the tree"),
        (
            ("decompose", "root"),
            "node decompose: node 'root' already has children; only a leaf is decomposed "
            "(pass --from FILE to add children to it now)",
        ),
        (
            ("retry", "root.2", "--attempts", "0"),
            "node retry: --attempts must be at least 1, not 0",
        ),
    ],
)
def test_refused_operations_change_nothing(
    project: Project, args: tuple[str, ...], expected: str
) -> None:
    stuck_project(project)
    head = project.head()
    result = project.runner("node", *args)
    assert assert_one_error_line(result) == expected
    assert project.head() == head
    assert project.status() == ""


def test_replace_refuses_a_subtree_holding_passed_nodes(project: Project, tmp_path: Path) -> None:
    stuck_project(project)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "T", "goal": "G", "acceptance": [], "next": "execute"}))
    result = project.runner("node", "replace", "root", "--from", str(plan))
    assert assert_one_error_line(result) == (
        "node replace: the subtree of 'root' holds passed node(s) root.1; passed nodes never change"
    )


def test_replace_refuses_a_plan_with_unknown_fields(project: Project, tmp_path: Path) -> None:
    stuck_project(project)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "T", "goal": "G", "acceptance": [], "next": "x", "id": 1}))
    result = project.runner("node", "replace", "root.2", "--from", str(plan))
    assert assert_one_error_line(result) == (
        "node replace: --from has unknown field(s) id "
        "(allowed: title, goal, acceptance, next, children)"
    )


def test_node_commands_refuse_a_dirty_working_tree(project: Project) -> None:
    stuck_project(project)
    (project.root / "notes.txt").write_text("draft\n")
    result = project.runner("node", "retry", "root.2")
    assert assert_one_error_line(result).startswith("working tree is not clean: notes.txt;")


def test_node_commands_work_from_main_on_the_run(project: Project) -> None:
    # This rule changed (it used to refuse off the run branch): from main a node
    # command changes the run in its own checkout and commits on the run's branch.
    stuck_project(project)
    run = project.run_id
    project.git("checkout", "--quiet", "main")
    status = project.status()
    result = project.runner("node", "retry", "root.2")
    assert result.returncode == 0, result.stderr
    assert "Runner-Op: retry" in project.git("log", "-1", "--format=%B", f"runner/{run}")
    assert project.status() == status
    assert project.git("branch", "--show-current").strip() == "main"
