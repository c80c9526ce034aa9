"""What `runner init` proposes for a project it recognises (runner_core.run.project_kinds)."""

from __future__ import annotations

import pytest

from runner_core.run.project_kinds import ProjectKind, project_kind

LOCKED = ("package-lock.json", "package.json")
NPM_CI = ProjectKind("Node", "package-lock.json", ("npm", "test"), ("npm", "ci"), LOCKED)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"package.json", "package-lock.json", "README.md"}, NPM_CI),
        (
            {"package.json", "pnpm-lock.yaml", "package-lock.json"},
            ProjectKind(
                "Node",
                "pnpm-lock.yaml",
                ("pnpm", "test"),
                ("pnpm", "install", "--frozen-lockfile"),
                ("package.json", "pnpm-lock.yaml"),
            ),
        ),
        (
            {"package.json", "yarn.lock"},
            ProjectKind(
                "Node",
                "yarn.lock",
                ("yarn", "test"),
                ("yarn", "install", "--frozen-lockfile"),
                ("package.json", "yarn.lock"),
            ),
        ),
        (
            {"package.json"},
            ProjectKind(
                "Node", "package.json", ("npm", "test"), ("npm", "install"), ("package.json",)
            ),
        ),
        ({"go.mod", "go.sum"}, ProjectKind("Go", "go.mod", ("go", "test", "./..."))),
        ({"Cargo.toml", "Cargo.lock"}, ProjectKind("Rust", "Cargo.toml", ("cargo", "test"))),
    ],
)
def test_a_project_is_known_by_the_files_at_its_top(files: set[str], expected: ProjectKind) -> None:
    assert project_kind(frozenset(files), frozenset({"test", "build"})) == expected


@pytest.mark.parametrize(
    "files",
    [set(), {"README.md"}, {"pyproject.toml", "uv.lock"}, {"justfile", "package.json", "go.mod"}],
)
def test_a_project_with_a_justfile_or_of_no_known_kind_keeps_the_defaults(
    files: set[str],
) -> None:
    assert project_kind(frozenset(files), frozenset({"test"})) is None


def test_a_node_project_without_a_test_script_is_set_up_but_keeps_the_default_guard() -> None:
    found = project_kind(frozenset({"package.json", "package-lock.json"}), frozenset({"build"}))

    assert found == ProjectKind("Node", "package-lock.json", None, ("npm", "ci"), LOCKED)
