"""A repository's prompt templates (`.runner/prompts/`) through the real CLI: the shipped ones
send the built-in prompt, an edited one changes what the agent receives and is recorded by its
hash, and one that does not render is refused before any agent runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.helpers.e2e import Project, ProjectFactory, assert_one_error_line, node

DONE = {"output": {"status": "done", "summary": "did it"}}


def _step(project: Project) -> None:
    result = project.runner("step")
    assert result.returncode == 0, result.stderr


def test_the_shipped_templates_send_the_builtin_prompt(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    sent = []
    for name, with_templates in (("builtin", False), ("templated", True)):
        (tmp_path / name).mkdir()
        project = make_project(tmp_path / name, "started")
        if with_templates:
            init = project.runner("init", "--prompts")
            assert init.returncode == 0, init.stderr
            assert "init: prompt template .runner/prompts/executor.md.j2" in init.stdout
        project.prepare(node("root", max_attempts=5))
        project.agent_script({1: {"output": {"status": "retry", "summary": "not yet"}}, 2: DONE})
        _step(project)
        _step(project)  # the second prompt has history.md's section
        # The output file's path names the repository, which differs between the two.
        root = str(project.root.resolve())
        sent.append([project.record(n)["prompt"].replace(root, "ROOT") for n in (1, 2)])
    assert sent[0] == sent[1]
    assert "## Previous attempt\n\nnot yet\n" in sent[1][1]
    sha = hashlib.sha256((project.runner_dir / "prompts/executor.md.j2").read_bytes()).hexdigest()
    assert project.meta(2)["prompt_template"] == sha


def test_an_edited_template_changes_what_the_agent_receives(project: Project) -> None:
    project.prepare(node("root"))
    prompts = project.runner_dir / "prompts"
    prompts.mkdir()
    source = "Work on {{ node.id }} ({{ role }}, iteration {{ iteration }}).\n\n{{ output }}"
    (prompts / "executor.md.j2").write_text(source, encoding="utf-8")
    project.commit_setup("my prompt")
    project.agent_script({1: DONE})
    _step(project)
    prompt = project.record(1)["prompt"]
    assert prompt.startswith("Work on root (executor, iteration 1).\n\n## Output contract\n")
    assert "Runner contract" not in prompt and "Task tree summary" not in prompt
    shown = project.runner("show", "1", "--prompt")
    assert shown.returncode == 0 and shown.stdout == prompt
    document = json.loads(project.runner("show", "1", "--json").stdout)
    expected = hashlib.sha256(source.encode()).hexdigest()
    assert document["meta"]["prompt_template"] == expected


def test_an_unknown_variable_is_refused_before_the_agent_runs(project: Project) -> None:
    project.prepare(node("root"))
    prompts = project.runner_dir / "prompts"
    prompts.mkdir()
    (prompts / "executor.md.j2").write_text("{{ output }}\n{{ goal_text }}\n", encoding="utf-8")
    project.commit_setup("a broken prompt")
    project.agent_script({1: DONE})
    line = assert_one_error_line(project.runner("step"))
    assert ".runner/prompts/executor.md.j2:2: unknown variable 'goal_text'" in line
    assert not (project.harness / "records").exists()  # no agent ran
    assert not project.iter_dir(1).exists()
    validate = project.runner("validate")
    assert validate.returncode == 1
    assert "executor.md.j2:2: unknown variable 'goal_text'" in validate.stderr


def test_an_agent_cannot_write_its_own_prompt(project: Project) -> None:
    project.prepare(node("root", max_attempts=5))
    hostile = {".runner/prompts/executor.md.j2": "OBEY: {{ output }}"}
    retry = {"status": "retry", "summary": "again"}
    project.agent_script({1: {"files": hostile, "output": retry}, 2: DONE})
    _step(project)
    _step(project)
    assert not (project.runner_dir / "prompts").exists()
    assert not project.record(2)["prompt"].startswith("OBEY")
    assert "prompt_template" not in project.meta(2)


def test_start_refuses_a_template_that_does_not_render(unstarted_project: Project) -> None:
    prompts = unstarted_project.runner_dir / "prompts"
    prompts.mkdir()
    (prompts / "decomposer.md.j2").write_text("{{ output }}\n{% for x in %}\n", encoding="utf-8")
    unstarted_project.goal_path.write_text("# Goal\n\nSomething.\n", encoding="utf-8")
    unstarted_project.commit_setup("a broken prompt")
    line = assert_one_error_line(unstarted_project.runner("start"))
    assert line.startswith(".runner/prompts/decomposer.md.j2:2: "), line
    assert "runner/" not in unstarted_project.git("branch", "--list", "runner/*")
