"""runner_shell/setup/scaffold.py in this process: `runner init` writes `.runner/` and keeps
what is the user's; `runner start` refuses what the first step would refuse, before creating
anything, and starting a started run again starts nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_core import Config
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.setup.scaffold import init_runner, recognised_project, start_run
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state, load_tree
from tests.helpers.git_repos import git, new_repo, started_run, subjects


def test_init_writes_a_valid_draft_and_refuses_to_overwrite_it(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    init_runner(paths, force=False, config=Config(max_iterations=9))
    assert load_run_state(paths).run_id is None
    assert load_tree(paths).id == "root"
    assert "max_iterations = 9" in paths.config.read_text(encoding="utf-8")
    assert {"context/", "iterations/"} <= set(paths.gitignore.read_text().splitlines())
    for schema in (paths.schema, paths.decomposer_schema, paths.executor_schema):
        assert isinstance(json.loads(schema.read_text(encoding="utf-8")), dict)
    with pytest.raises(UserFacingError, match=r"already exists; use 'runner init --force'"):
        init_runner(paths, force=False, config=Config())


def test_init_force_keeps_the_users_goal(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    init_runner(paths, force=False, config=Config())
    paths.goal.write_text("# Goal\n\nMine.\n", encoding="utf-8")
    init_runner(paths, force=True, config=Config(max_iterations=3))
    assert paths.goal.read_text(encoding="utf-8") == "# Goal\n\nMine.\n"
    assert "max_iterations = 3" in paths.config.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("files", "kind", "guard"),
    [
        ({"go.mod": "module x\n"}, "Go", ("go", "test", "./...")),
        ({"package.json": '{"scripts": {"test": "node --test"}}'}, "Node", ("npm", "test")),
        ({"package.json": '{"scripts": {}}'}, "Node", None),
        ({"package.json": "not json"}, "Node", None),
        ({"package.json": "[" * 5_000 + "]" * 5_000}, "Node", None),  # deeper than json reads
        ({"Cargo.toml": ""}, "Rust", ("cargo", "test")),
        ({"README.md": ""}, None, None),
    ],
)
def test_the_project_kind_is_read_from_the_files_at_its_top(
    tmp_path: Path, files: dict[str, str], kind: str | None, guard: tuple[str, ...] | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "go.mod.d").mkdir()  # a directory is no file of the project's top
    found = recognised_project(tmp_path)
    assert (found and found.name, found and found.guard) == (kind, guard)


def test_start_refuses_a_dirty_tree_and_creates_no_branch(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    init_runner(paths, force=False, config=Config())
    paths.goal.write_text("# Goal\n\nX.\n", encoding="utf-8")
    (tmp_path / "wip.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"wip\.py"):
        start_run(paths, Repo(tmp_path))
    assert git(tmp_path, "branch", "--list", "runner/*") == ""
    assert load_run_state(paths).run_id is None


def test_start_refuses_the_init_placeholder_goal(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    init_runner(paths, force=False, config=Config())
    with pytest.raises(UserFacingError, match=r"GOAL\.md"):
        start_run(paths, Repo(tmp_path))
    assert git(tmp_path, "branch", "--list", "runner/*") == ""


def test_a_start_commits_the_run_on_its_branch_and_again_starts_nothing(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    assert git(tmp_path, "branch", "--show-current").strip() == f"runner/{run_id}"
    assert load_run_state(paths).run_id == run_id
    assert paths.goal.read_text(encoding="utf-8").startswith(f"---\nid: {run_id}\n---\n# Goal")
    assert git(tmp_path, "status", "--porcelain") == ""
    before = subjects(tmp_path)
    again = start_run(paths, repo)
    assert (again.run_id, again.already) == (run_id, True)
    assert subjects(tmp_path) == before
    assert "iterations/" in repo.common_path("info/exclude").read_text(encoding="utf-8")
