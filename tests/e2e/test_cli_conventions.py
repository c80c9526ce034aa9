"""End-to-end specification of the CLI's conventions ("a CLI that tells the truth").

`--version`/`-V`, `-h` as `--help`, no type placeholders for flags, usage errors exit 1 (2
means complete), `runner -C DIR`, one shell-quoted `--guard`/`--agent`, `select`/`validate`
`--json`, `loop --max-steps`, and hints that lead to the fix.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers import SCHEMAS
from tests.helpers.e2e import PYTHON, Project, assert_one_error_line, lines, node

DONE = {"status": "done", "summary": "Did it."}
COMMANDS = [
    "init",
    "start",
    "validate",
    "select",
    "step",
    "loop",
    "recover",
    "demo",
    "tell",
    "status",
    "history",
    "show",
    "report",
    "runs",
    "metrics",
    "node",
]
NODE_COMMANDS = ("retry", "decompose", "replace", "skip")


def schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / "views" / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def runner_in(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "runner_shell", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_package_version(project: Project, flag: str) -> None:
    from importlib.metadata import version

    result = project.runner(flag)
    assert (result.returncode, lines(result.stdout)) == (0, [f"runner {version('runner')}"])


@pytest.mark.parametrize("command", [(), ("status",), ("node", "retry")])
def test_dash_h_is_help(project: Project, command: tuple[str, ...]) -> None:
    short, long = project.runner(*command, "-h"), project.runner(*command, "--help")
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout
    assert short.stdout.startswith("Usage: ")


@pytest.mark.parametrize(
    "command", [(name,) for name in COMMANDS] + [("node", name) for name in NODE_COMMANDS]
)
def test_help_has_no_type_placeholders_for_options(
    project: Project, command: tuple[str, ...]
) -> None:
    result = project.runner(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "<bool>" not in result.stdout
    options = [line for line in lines(result.stdout) if line.lstrip().startswith("-")]
    assert not any("<" in line.split("  ")[0] for line in options), options


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("select", "--bogus"), "runner: No such option: --bogus (see 'runner select --help')"),
        (("frobnicate",), "runner: No such command 'frobnicate'. (see 'runner --help')"),
        (("node", "retry"), "runner: Missing argument 'ID'. (see 'runner node retry --help')"),
    ],
)
def test_a_usage_error_exits_1_with_one_line(
    project: Project, args: tuple[str, ...], expected: str
) -> None:
    result = project.runner(*args)
    assert assert_one_error_line(result) == expected.removeprefix("runner: ")


def test_dash_c_runs_in_another_directory(project: Project, tmp_path: Path) -> None:
    run = project.prepare(node("root"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = runner_in(elsewhere, project.env, "-C", str(project.root), "select")
    assert (result.returncode, lines(result.stdout)) == (
        0,
        ["select: status=open id=root path=root attempts=0/3"],
    )
    missing = runner_in(elsewhere, project.env, "-C", str(tmp_path / "nope"), "status")
    assert assert_one_error_line(missing).startswith(f"-C {tmp_path / 'nope'}:")
    assert run


@pytest.mark.parametrize(
    "words", [("python -m pytest -q",), ("python", "-m", "pytest", "-q")], ids=["quoted", "words"]
)
def test_init_guard_takes_a_quoted_string_or_words(
    fresh_project: Project, words: tuple[str, ...]
) -> None:
    args = [arg for word in words for arg in ("--guard", word)]
    result = fresh_project.runner("init", *args, "--backend", "command", "--agent", "my agent -x")
    assert result.returncode == 0, result.stderr
    config = tomllib.loads(fresh_project.config_path.read_text(encoding="utf-8"))
    assert config["guard"]["command"] == ["python", "-m", "pytest", "-q"]
    assert config["agent"]["command"] == ["my", "agent", "-x"]


def test_init_refuses_an_unsplittable_guard(fresh_project: Project) -> None:
    result = fresh_project.runner("init", "--guard", "python 'unclosed")
    assert assert_one_error_line(result).startswith("init: --guard: cannot split")


@pytest.mark.parametrize(
    ("tree", "code", "expected"),
    [
        (node("root"), 0, {"status": "open", "id": "root", "path": "root", "attempts": 0}),
        (node("root", attempts=3), 3, {"status": "stuck", "id": "root", "attempts": 3}),
        (node("root", passes=True), 2, {"status": "complete", "id": None, "path": None}),
    ],
)
def test_select_json_keeps_the_exit_code(
    project: Project, tree: dict[str, Any], code: int, expected: dict[str, Any]
) -> None:
    project.prepare(tree)
    result = project.runner("select", "--json")
    assert result.returncode == code, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema("select"), cls=jsonschema.Draft202012Validator)
    assert expected.items() <= document.items()


def test_validate_json_of_a_started_run(project: Project) -> None:
    run = project.prepare(node("root"))
    result = project.runner("validate", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema("validate"), cls=jsonschema.Draft202012Validator)
    assert document == {
        "layout": "ok",
        "config": "ok",
        "tree": "ok",
        "run": "ok",
        "id": run,
        "branch": f"runner/{run}",
        "sandbox": "off",  # the e2e configs say mode = "off"
        "userns": "no",
        "caps": "host",
        "seccomp": "no",
        "fs": "host",
        "env": "listed",  # the environment's allow-list holds unsandboxed too
        "net": "host",  # unsandboxed: the agent has the host's network
        "limits": "none",
    }


def test_loop_max_steps_stops_after_n_steps(project: Project) -> None:
    tree = node("root", children=[node("root.1"), node("root.2", order=1)])
    run = project.prepare(tree)
    project.agent_script({1: {"output": DONE}, 2: {"output": DONE}})
    result = project.runner("loop", "--max-steps", "1")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root.1 status=done guard=pass",
        f"loop: status=max-steps run={run} steps=1 started_at_iter=1",
    ]
    assert project.run_state()["next_iter"] == 2


def test_a_state_file_replaced_by_a_directory_is_refused_in_the_readers_words(
    project: Project,
) -> None:
    project.prepare(node("root"))
    project.run_state_path.unlink()
    project.run_state_path.mkdir()
    name = ".runner/state/run_state.json"

    message = assert_one_error_line(project.runner("status"))

    assert message == (
        f"{name} is a directory, not a regular file; the runner does not read it "
        f"(restore it with 'git checkout -- {name}')"
    )


def test_a_deleted_state_file_git_still_has_is_restored_with_git(project: Project) -> None:
    project.prepare(node("root"))
    project.run_state_path.unlink()
    name = ".runner/state/run_state.json"
    for command in ("status", "step", "validate"):
        message = assert_one_error_line(project.runner(command))
        assert message == f"{name} is missing but git still has it (run 'git checkout -- {name}')"
