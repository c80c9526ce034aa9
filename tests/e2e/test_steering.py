"""End-to-end specification of steering a run from the CLI: `runner config`, `runner tell
--clear`, `runner stop`, agents' questions with `runner answer`, and `runner node add|edit`.

Each change is one commit that `runner audit` accepts, while a hand edit of config.toml
stays a finding; `runner stop` pauses a loop between iterations and `runner loop` resumes.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from runner_core.run.questions import QUESTIONS_HEADER
from tests.helpers.crash import spawn, wait_for_processes
from tests.helpers.e2e import PYTHON, Project, assert_one_error_line, find_node, lines, node

DONE = {"status": "done", "summary": "Did it."}
TWO_LEAVES = node(
    "root", next_="decompose", children=[node("root.1", order=0), node("root.2", order=1)]
)


def audit_clean(project: Project) -> None:
    """`runner audit` finds nothing but what the test's own setup commits did by hand (a tree
    edited, a leaf passed without an iteration)."""
    setups = project.git("log", "--format=%h", "--abbrev=8", "--grep=^test setup$").split()
    result = project.runner("audit")
    findings = [
        line
        for line in lines(result.stdout)
        if line.startswith("audit: finding") and "passed leaf without an iteration" not in line
    ]
    assert [line for line in findings if line.split()[2][7:] not in setups] == []


# ---------------------------------------------------------------- runner config


def test_config_set_validates_commits_and_audit_accepts_it(project: Project) -> None:
    run = project.prepare(TWO_LEAVES)
    result = project.runner("config", "set", "budget.max_cost_usd", "5")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"config: op=set key=budget.max_cost_usd run={run}"]
    assert project.subjects()[-1] == f"chore(runner): config set budget.max_cost_usd run {run}"
    assert project.status() == ""
    shown = tomllib.loads(project.runner("config", "show").stdout)
    assert shown["budget"] == {"max_cost_usd": 5.0}
    assert json.loads(project.runner("config", "show", "--json").stdout) == shown
    hooked = project.runner("config", "set", "hooks.on_stuck", "notify-send stuck")
    assert hooked.returncode == 0, hooked.stderr
    assert project.runner("config", "unset", "budget.max_cost_usd").returncode == 0
    assert tomllib.loads(project.runner("config", "show").stdout)["budget"] == {}
    audit_clean(project)
    assert "op=config" not in project.runner("audit").stdout  # the summary counts them
    assert "operator_ops=3" in project.runner("audit").stdout


def test_config_set_refuses_a_bad_value_in_one_line_and_changes_nothing(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    before = project.head()
    result = project.runner("config", "set", "max_iterations", "0")
    assert assert_one_error_line(result) == "config set: max_iterations: must be > 0, got 0"
    unknown = project.runner("config", "set", "budget.max_dollars", "3")
    assert assert_one_error_line(unknown).startswith("config set: budget.max_dollars: unknown key")
    assert project.head() == before
    assert project.status() == ""


def test_audit_still_flags_a_hand_edit_of_config_toml(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    text = project.config_path.read_text(encoding="utf-8")
    project.config_path.write_text(text + "\n[budget]\nmax_cost_usd = 9.0\n", encoding="utf-8")
    project.commit_setup("raise the budget")
    result = project.runner("audit")
    assert result.returncode == 1
    assert lines(result.stdout)[-1].endswith("hand edit .runner/state/config.toml")


def test_config_set_is_refused_while_a_loop_holds_the_lock(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"sleep": 3, "output": DONE}, 2: {"output": DONE}})
    loop = spawn(project, "loop")
    try:
        wait_for_processes(project, 1)
        result = project.runner("config", "set", "max_iterations", "50")
        assert "another runner holds the lock" in assert_one_error_line(result)
    finally:
        _out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, err


def test_tell_clear_removes_the_guidance_in_one_commit(project: Project) -> None:
    run = project.prepare(TWO_LEAVES)
    assert project.runner("tell", "Use tabs.").returncode == 0
    result = project.runner("tell", "--clear")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"tell: run={run} cleared=.runner/state/guidance.md"]
    assert not (project.runner_dir / "state" / "guidance.md").exists()
    assert project.subjects()[-1] == f"chore(runner): clear guidance run {run}"
    again = project.runner("tell", "--clear")
    assert assert_one_error_line(again) == "tell --clear: there is no guidance to clear"
    audit_clean(project)


def test_tell_file_is_capped_at_one_mebibyte(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    note = project.harness / "note.md"
    note.write_text("x" * (1024 * 1024 + 1), encoding="utf-8")
    result = project.runner("tell", "--file", str(note))
    assert "limit 1048576" in assert_one_error_line(result)


# ---------------------------------------------------------------- runner stop


# One slot: the stop pauses the loop after the one iteration running. With several slots both
# leaves run at once and a stop lets every running job merge first (docs/parallel.md).
@pytest.mark.one_slot
def test_stop_pauses_the_loop_after_its_iteration_and_loop_resumes(project: Project) -> None:
    run = project.prepare(TWO_LEAVES)
    project.agent_script({1: {"sleep": 2, "output": DONE}, 2: {"output": DONE}})
    loop = spawn(project, "loop")
    try:
        wait_for_processes(project, 1)
        stop = project.runner("stop")
        assert stop.returncode == 0, stop.stderr
    finally:
        out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, err
    assert lines(out)[-1] == f"loop: status=paused run={run} steps=1 started_at_iter=1"
    events = (project.runner_dir / "iterations" / run / "events.jsonl").read_text()
    assert json.loads(events.splitlines()[-1])["type"] == "paused"
    resumed = project.runner("loop")
    assert resumed.returncode == 0, resumed.stderr
    assert lines(resumed.stdout)[-1].startswith(f"loop: status=complete run={run} steps=1")


def test_stop_without_a_running_loop_is_refused(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    result = project.runner("stop")
    assert assert_one_error_line(result) == "stop: no runner loop is running on this repository"
    project.agent_script({1: {"output": DONE}, 2: {"output": DONE}})
    assert lines(project.runner("loop").stdout)[-1].startswith("loop: status=complete")


# ---------------------------------------------------------------- questions and answers


def test_questions_fire_on_question_show_in_status_and_the_answer_reaches_the_prompt(
    project: Project,
) -> None:
    seen = project.harness / "question.json"
    hook = [PYTHON, "-c", f"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())"]
    project.prepare(TWO_LEAVES, hooks={"on_question": hook})
    asked = QUESTIONS_HEADER + "- Which database?\n"
    project.agent_script(
        {
            1: {"files": {".runner/state/questions.md": asked}, "output": DONE},
            2: {"output": DONE},
        }
    )
    assert project.runner("loop", "--max-steps", "1").returncode == 0
    event = json.loads(seen.read_text())
    assert (event["type"], event["questions"]) == ("question", "- Which database?\n")
    assert "  - Which database?" in lines(project.runner("status").stdout)
    report = project.runner("report").stdout
    assert "  - Which database?" in lines(report)
    answer = project.runner("answer", "SQLite, in data/app.db.")
    assert answer.returncode == 0, answer.stderr
    status = json.loads(project.runner("status", "--json").stdout)
    assert status["questions"] is None
    assert project.runner("loop").returncode == 0
    prompt = project.record(2)["prompt"]
    assert "> - Which database?\n\nSQLite, in data/app.db." in prompt
    audit_clean(project)
    none_left = project.runner("answer", "again")
    assert "no open questions" in assert_one_error_line(none_left)


# ---------------------------------------------------------------- runner node add|edit


def test_node_add_and_edit_keep_attempts_and_the_loop_runs_them(project: Project) -> None:
    tree = node(
        "root",
        next_="decompose",
        children=[node("root.1", order=0, passes=True), node("root.2", order=1, attempts=1)],
    )
    run = project.prepare(tree)
    added = project.runner(
        "node", "add", "root", "--title", "Docs", "--goal", "Write docs", "--acceptance", "A"
    )
    assert added.returncode == 0, added.stderr
    assert lines(added.stdout) == [f"node: op=add id=root.3 parent=root run={run}"]
    edited = project.runner("node", "edit", "root.2", "--goal", "A clearer goal")
    assert edited.returncode == 0, edited.stderr
    assert lines(edited.stdout) == [
        f"node: op=edit id=root.2 run={run} next=execute attempts=1/3 children=none"
    ]
    state = project.tree()
    assert find_node(state, "root.2")["goal"] == "A clearer goal"
    assert find_node(state, "root.2")["attempts"] == 1
    assert find_node(state, "root.3")["order"] == 2
    assert find_node(state, "root.3")["acceptance"] == ["A"]
    audit_clean(project)
    project.agent_script({1: {"output": DONE}, 2: {"output": DONE}})
    loop = project.runner("loop")
    assert lines(loop.stdout)[-1].startswith(f"loop: status=complete run={run} steps=2")


def test_a_passed_node_cannot_be_edited_or_added_to(project: Project) -> None:
    tree = node("root", next_="decompose", children=[node("root.1", order=0, passes=True)])
    tree["passes"] = True
    project.prepare(tree)
    edit = project.runner("node", "edit", "root.1", "--title", "x")
    assert assert_one_error_line(edit) == (
        "node edit: node 'root.1' has passed; passed nodes never change"
    )
    add = project.runner("node", "add", "root", "--title", "x", "--goal", "y")
    assert "node add: node 'root' has passed" in assert_one_error_line(add)
