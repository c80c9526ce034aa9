"""`[agent.decomposer]` and `[agent.executor]`: each role's iterations run the backend its table
names, recorded in each iteration's `meta.json`.

The decomposer is the suite's scripted `command` agent; the executor is the fake `codex` of
tests/helpers/fake_clis, found on PATH as the real one would be.
"""

from __future__ import annotations

import os
import signal

from runner_core.backends.registry import PINNED
from tests.helpers import FAKE_CLIS
from tests.helpers.crash import CRASH_POINTS, cli
from tests.helpers.e2e import Project, assert_one_error_line, child_spec, lines, node

FAKE_ENV = {"env": ["HARNESS", "FAKE_CLI_*", "FAKE_CODEX_*"]}


def executor_on_codex(project: Project, extra: str = "") -> None:
    text = project.config_path.read_text(encoding="utf-8")
    project.config_path.write_text(
        text + f'\n[agent.executor]\nbackend = "codex"\n{extra}', encoding="utf-8"
    )
    project.commit_setup("the executor runs codex")


def test_the_decomposer_and_the_executor_run_the_backends_their_tables_name(
    project: Project,
) -> None:
    run = project.prepare(node("root", next_="decompose"), sandbox=FAKE_ENV)
    executor_on_codex(project)
    project.env["PATH"] = f"{FAKE_CLIS}{os.pathsep}{project.env['PATH']}"
    children = [child_spec("First"), child_spec("Second")]
    project.agent_script({1: {"output": {"summary": "split in two", "children": children}}})

    result = project.runner("loop", timeout=120)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert out[-1].startswith(f"loop: status=complete run={run} steps=3 "), out
    metas = [project.meta(iteration) for iteration in (1, 2, 3)]
    ran = [(meta["role"], meta["backend"], meta["status"]) for meta in metas]
    assert ran == [
        ("decomposer", "command", "decomposed"),
        ("executor", "codex", "done"),
        ("executor", "codex", "done"),
    ], ran
    # Only the decomposer ran the scripted agent: codex's runs left no record of it.
    assert sorted(path.name for path in (project.harness / "records").iterdir()) == ["1.json"]
    history = lines(project.runner("history").stdout)
    assert history[1].split()[:4] == ["ITER", "NODE", "ROLE", "BACKEND"], history
    assert history[2].split()[2:4] == ["decomposer", "command"], history
    assert history[3].split()[2:4] == ["executor", "codex"], history


def test_validate_names_the_role_table_whose_program_is_missing(project: Project) -> None:
    project.prepare(node("root"), sandbox=FAKE_ENV)
    executor_on_codex(project)  # no codex on the suite's PATH

    result = project.runner("validate")

    line = assert_one_error_line(result)
    assert line == (
        "agent.executor.command: program 'codex' was not found on PATH; install it with "
        f"`npm install -g @openai/codex@{PINNED['codex']}` or fix agent.executor.command in "
        ".runner/state/config.toml"
    ), line


def test_a_bad_role_table_is_refused_naming_its_key(project: Project) -> None:
    project.prepare(node("root"))
    text = project.config_path.read_text(encoding="utf-8")
    project.config_path.write_text(
        text + '\n[agent.decomposer]\nbackend = "gpt"\n', encoding="utf-8"
    )

    result = project.runner("validate")

    line = assert_one_error_line(result)
    assert "agent.decomposer.backend: must be one of" in line, line
    assert "got 'gpt'" in line, line


def test_recover_books_an_interrupted_iteration_on_its_roles_backend(project: Project) -> None:
    project.prepare(node("root"), sandbox=FAKE_ENV)
    executor_on_codex(project)
    project.env["PATH"] = f"{FAKE_CLIS}{os.pathsep}{project.env['PATH']}"
    project.guard_script([{"sleep": 30}, {}])
    killed = cli(project, "step", env={"RUNNER_TEST_CRASH_AT": CRASH_POINTS["during-guard"]})
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    result = cli(project, "recover")

    assert result.returncode == 0, result.stderr
    meta = project.meta(1)
    assert (meta["role"], meta["backend"], meta["error_kind"]) == ("executor", "codex", "runner")
