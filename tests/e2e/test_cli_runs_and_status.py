"""End-to-end specification of a run's life cycle and of what status tells an operator.

`runner start` on main refuses to guess between runs; `runner start --new` starts another,
also after the first was merged into main; `runner runs` lists them. `runner status` says
`running` only while the journal's runner lives, shows the operator's guidance, the agents'
questions whenever there are any and the operator commits; `history` and `report` list them.
"""

from __future__ import annotations

import json
import signal
from typing import Any

import jsonschema

from tests.helpers import SCHEMAS
from tests.helpers.crash import spawn, wait_for_processes
from tests.helpers.e2e import IDENTITY, Project, assert_one_error_line, child_spec, lines, node

DONE = {"status": "done", "summary": "Did it."}


def schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / "views" / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def json_of(project: Project, command: str, *args: str) -> dict[str, Any]:
    result = project.runner(command, "--json", *args)
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, schema(command), cls=jsonschema.Draft202012Validator)
    return document


def completed_run(project: Project) -> str:
    run = project.prepare(node("root"))
    project.agent_script({1: {"output": DONE}})
    assert project.runner("loop").returncode == 0
    return run


# ---------------------------------------------------------------- runs


def test_start_on_main_with_an_existing_run_names_it_and_both_ways_on(project: Project) -> None:
    # The run is worked on from main; `start --new` starts another beside it.
    run = project.prepare(node("root"))
    project.git("checkout", "--quiet", "main")
    result = project.runner("start")
    assert assert_one_error_line(result) == (
        f"start: run {run} is active (work on it from here, e.g. 'runner loop'); "
        "'runner start --new' starts another beside it"
    )


def test_step_on_main_while_a_run_branch_exists_works_on_that_run(project: Project) -> None:
    # This rule changed: a step from main works on the run in its own checkout.
    run = project.prepare(node("root"))
    project.git("checkout", "--quiet", "main")
    project.agent_script({1: {"output": DONE}})
    result = project.runner("step")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=pass"]
    assert project.git("branch", "--show-current").strip() == "main"


def test_start_on_the_run_branch_keeps_the_run(project: Project) -> None:
    run = project.prepare(node("root"))
    result = project.runner("start")
    assert lines(result.stdout) == [f"already started run={run} branch=runner/{run}"]


def test_a_second_run_after_the_first_was_merged_into_main(project: Project) -> None:
    first = completed_run(project)
    (project.root / ".runner" / "state" / "assumptions.md").write_text("# Assumptions\n\nA1\n")
    project.commit_setup("assumption")
    project.git("checkout", "--quiet", "main")
    project.git(*IDENTITY, "merge", "--quiet", "--no-ff", "-m", "merge run", f"runner/{first}")
    project.git("branch", "-D", f"runner/{first}")
    refused = project.runner("start", "--here")
    assert f"run(s) {first} exist" in assert_one_error_line(refused)
    started = project.runner("start", "--new", "--here")
    assert started.returncode == 0, started.stderr
    second = project.run_id
    assert second != first
    assert lines(started.stdout) == [f"started run={second} branch=runner/{second}"]
    assert project.git("branch", "--show-current").strip() == f"runner/{second}"
    assert f"id: {second}" in project.goal_path.read_text()
    tree = project.tree()
    assert (tree["id"], tree["passes"], tree["children"]) == ("root", False, [])
    assert project.run_state()["next_iter"] == 1
    assert "A1" in (project.root / ".runner" / "state" / "assumptions.md").read_text()
    assert project.status() == ""
    split = {"summary": "One step.", "children": [child_spec("Only")]}
    project.agent_script({1: {"output": split}, 2: {"output": DONE}})
    loop = project.runner("loop")
    assert loop.returncode == 0, loop.stderr
    assert lines(loop.stdout)[-1].startswith(f"loop: status=complete run={second} steps=2")


def test_runs_json_lists_every_run_with_its_state(project: Project) -> None:
    first = completed_run(project)
    assert project.runner("start", "--new").returncode == 0
    second = project.run_id
    document = json_of(project, "runs")
    rows = {row["id"]: row for row in document["runs"]}
    assert set(rows) == {first, second}
    assert rows[first]["state"] == "complete"
    assert rows[first]["branch"] == f"runner/{first}"
    assert rows[first]["leaves"] == {"passed": 1, "total": 1}
    assert rows[first]["next_iter"] == 2
    assert rows[second]["state"] == "open"
    assert rows[second]["next_iter"] == 1
    text = project.runner("runs")
    assert f"run: id={first} branch=runner/{first} state=complete next_iter=2 leaves=1/1" in (
        text.stdout
    )


def test_runs_before_any_run_says_none(unstarted_project: Project) -> None:
    unstarted_project.commit_setup()
    result = unstarted_project.runner("runs")
    assert (result.returncode, lines(result.stdout)) == (0, ["runs: none (run 'runner start')"])


# ---------------------------------------------------------------- status


def test_status_after_kill_9_of_a_loop_says_interrupted_and_recover(project: Project) -> None:
    run = project.prepare(node("root"))
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    loop = spawn(project, "loop")
    wait_for_processes(project, 1)
    loop.send_signal(signal.SIGKILL)
    loop.wait()
    document = json_of(project, "status")
    assert document["running"] is None
    assert (document["interrupted"]["iteration"], document["interrupted"]["node_id"]) == (1, "root")
    assert document["tree"][0]["state"] != "running"
    out = lines(project.runner("status").stdout)
    assert not any(line.startswith("status: running") for line in out)
    interrupted = [line for line in out if line.startswith("status: interrupted")]
    assert len(interrupted) == 1 and "run 'runner recover'" in interrupted[0]
    assert project.runner("recover").returncode == 0
    assert json_of(project, "status")["interrupted"] is None
    runs = json_of(project, "runs")
    assert runs["runs"][0]["id"] == run


def test_runs_shows_a_killed_run_as_interrupted(project: Project) -> None:
    project.prepare(node("root"))
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    step = spawn(project, "step")
    wait_for_processes(project, 1)
    step.send_signal(signal.SIGKILL)
    step.wait()
    assert json_of(project, "runs")["runs"][0]["state"] == "interrupted"
    assert project.runner("recover").returncode == 0


def test_status_shows_stuck_leaves_as_stuck_and_their_open_questions(project: Project) -> None:
    project.prepare(node("root", attempts=1, max_attempts=1))
    (project.root / ".runner" / "state" / "questions.md").write_text("Which database?\n")
    project.commit_setup("a question")
    document = json_of(project, "status")
    assert document["tree"][0]["state"] == "stuck"
    assert document["questions"] == "Which database?\n"
    out = lines(project.runner("status").stdout)
    assert "  Which database?" in out


def test_status_hides_a_questions_md_that_asks_nothing(project: Project) -> None:
    project.prepare(node("root"))
    assert json_of(project, "status")["questions"] is None


# ---------------------------------------------------------------- tell


def test_tell_commits_guidance_that_every_following_prompt_carries(project: Project) -> None:
    run = project.prepare(node("root"))
    result = project.runner("tell", "Use the stdlib only.")
    assert lines(result.stdout) == [f"tell: run={run} file=.runner/state/guidance.md"]
    assert project.subjects()[-1] == f"chore(runner): tell run {run}"
    assert project.status() == ""
    note = project.harness / "note.md"
    note.write_text("Keep functions short.\n")
    assert project.runner("tell", "--file", str(note)).returncode == 0
    project.agent_script({1: {"output": DONE}})
    assert project.runner("step").returncode == 0
    prompt = project.record(1)["prompt"]
    goal_at = prompt.index("## Project goal")
    guidance_at = prompt.index("## Operator guidance")
    assert goal_at < guidance_at < prompt.index("## Selected node")
    assert "Use the stdlib only.\n\nKeep functions short." in prompt
    assert "Keep functions short." in json_of(project, "status")["guidance"]


def test_tell_without_text_is_a_usage_error(project: Project) -> None:
    project.prepare(node("root"))
    assert assert_one_error_line(project.runner("tell")) == (
        "tell: give the guidance as TEXT or with --file F (one of them)"
    )


# ---------------------------------------------------------------- history and report


def test_history_status_and_report_list_operator_commits_with_the_iterations(
    project: Project,
) -> None:
    run = project.prepare(node("root", max_attempts=1))
    project.agent_script(
        {1: {"output": {"status": "retry", "summary": "hard"}}, 2: {"output": DONE}}
    )
    assert project.runner("loop").returncode == 3
    assert project.runner("node", "retry", "root", "--attempts", "1").returncode == 0
    assert project.runner("loop").returncode == 0
    out = lines(project.runner("history").stdout)
    assert out[0] == f"history: run={run} iterations=2 operator_actions=1"
    assert out[3] == "  operator op=retry node=root by=runner <runner@localhost>"
    assert out[2].split()[0] == "1" and out[4].split()[0] == "2"
    history = json_of(project, "history")
    assert history["operator_actions"] == [
        {"op": "retry", "node": "root", "by": "runner <runner@localhost>", "before_iteration": 2}
    ]
    status = lines(project.runner("status").stdout)
    assert "status: operator op=retry node=root by=runner <runner@localhost>" in status
    report = json_of(project, "report")
    assert report["operator_actions"]["count"] == 1
    text = lines(project.runner("report").stdout)
    assert any(line.split() == ["operator_actions", "1"] for line in text)
    assert "  before iter 2: op=retry node=root by=runner <runner@localhost>" in text


def test_history_of_an_unknown_node_is_an_error(project: Project) -> None:
    run = project.prepare(node("root"))
    assert assert_one_error_line(project.runner("history", "--node", "nope")) == (
        f"history: no node 'nope' in run {run}'s tree or iterations "
        "(see 'runner status' for the node ids)"
    )
    assert project.runner("history", "--node", "root").returncode == 0
