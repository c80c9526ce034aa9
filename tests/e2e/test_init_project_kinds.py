"""`runner init` in a Node, Go or Rust project proposes its guard and setup, says so in one
line, and leaves every other project, and an explicit `--guard`, as they were."""

from __future__ import annotations

import json
import tomllib

from runner_core import parse_config
from tests.helpers.e2e import Project


def _config(project: Project) -> dict[str, object]:
    return tomllib.loads(project.config_path.read_text(encoding="utf-8"))


def test_init_in_a_node_project_guards_with_its_test_script_and_sets_up_from_its_lock(
    fresh_project: Project,
) -> None:
    scripts = {"scripts": {"test": "node --test"}}
    (fresh_project.root / "package.json").write_text(json.dumps(scripts), encoding="utf-8")
    (fresh_project.root / "package-lock.json").write_text("{}", encoding="utf-8")

    result = fresh_project.runner("init")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        "init: a Node project (package-lock.json): guard=npm test setup=npm ci "
        "setup_inputs=package-lock.json,package.json (edit .runner/state/config.toml to change)"
    )
    config = _config(fresh_project)
    assert config["guard"]["command"] == ["npm", "test"]  # type: ignore[index]
    sandbox = config["sandbox"]
    assert sandbox["setup"] == ["npm", "ci"]  # type: ignore[index]
    assert sandbox["setup_inputs"] == ["package-lock.json", "package.json"]  # type: ignore[index]
    assert parse_config(config).sandbox.setup_inputs == ("package-lock.json", "package.json")


def test_an_explicit_guard_wins_and_a_package_json_without_a_test_script_is_said(
    fresh_project: Project,
) -> None:
    (fresh_project.root / "package.json").write_text('{"scripts": {}}', encoding="utf-8")

    given = fresh_project.runner("init", "--guard", "make check")
    said = given.stdout.splitlines()[1]

    assert given.returncode == 0, given.stderr
    assert said.startswith("init: a Node project (package.json): guard=make check setup=npm")
    assert _config(fresh_project)["guard"]["command"] == ["make", "check"]  # type: ignore[index]
    forced = fresh_project.runner("init", "--force")
    assert forced.stdout.splitlines()[1].startswith(
        "init: a Node project (package.json): guard=just ci (package.json has no test script)"
    )


def test_init_in_a_go_project_guards_with_go_test_and_sets_nothing_up(
    fresh_project: Project,
) -> None:
    (fresh_project.root / "go.mod").write_text("module example.com/x\n", encoding="utf-8")

    result = fresh_project.runner("init")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        "init: a Go project (go.mod): guard=go test ./... "
        "(edit .runner/state/config.toml to change)"
    )
    config = _config(fresh_project)
    assert config["guard"]["command"] == ["go", "test", "./..."]  # type: ignore[index]
    assert "setup" not in config["sandbox"]  # type: ignore[operator]


def test_a_project_with_a_justfile_keeps_just_ci_and_init_says_nothing_more(
    fresh_project: Project,
) -> None:
    (fresh_project.root / "justfile").write_text("ci:\n    true\n", encoding="utf-8")
    (fresh_project.root / "package.json").write_text("{}", encoding="utf-8")

    result = fresh_project.runner("init")

    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
    assert _config(fresh_project)["guard"]["command"] == ["just", "ci"]  # type: ignore[index]
