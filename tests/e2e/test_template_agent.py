"""`runner init --backend command` without `--agent` writes a working template agent,
`.runner/agent.py`, and a config that runs it: a run steps and completes with it as it is."""

from __future__ import annotations

import tomllib

from tests.helpers.e2e import Project, lines


def test_init_writes_a_template_agent_that_steps_to_completion(fresh_project: Project) -> None:
    project = fresh_project
    init = project.runner("init", "--backend", "command", "--guard", "true")
    assert init.returncode == 0, init.stderr
    assert lines(init.stdout)[-1] == (
        "init: agent=.runner/agent.py (a template agent: edit it to call yours)"
    )
    config = tomllib.loads(project.config_path.read_text(encoding="utf-8"))
    assert config["agent"] == {"backend": "command", "command": ["python3", ".runner/agent.py"]}
    agent = project.runner_dir / "agent.py"
    assert "RUNNER_OUTPUT_PATH" in agent.read_text(encoding="utf-8")
    project.goal_path.write_text("# Goal\n\nShip it.\n", encoding="utf-8")
    start = project.runner("start", "--here")
    assert start.returncode == 0, start.stderr
    run = project.run_id
    decompose = project.runner("step")
    assert lines(decompose.stdout) == [
        f"step: run={run} iter=1 node=root status=decomposed guard=skipped"
    ]
    execute = project.runner("step")
    assert lines(execute.stdout) == [f"step: run={run} iter=2 node=root.1 status=done guard=pass"]
    assert project.runner("select").returncode == 2


def test_an_existing_agent_py_is_kept(fresh_project: Project) -> None:
    mine = fresh_project.runner_dir / "agent.py"
    mine.parent.mkdir()
    mine.write_text("print('mine')\n", encoding="utf-8")
    result = fresh_project.runner("init", "--force", "--backend", "command")
    assert result.returncode == 0, result.stderr
    assert mine.read_text(encoding="utf-8") == "print('mine')\n"
