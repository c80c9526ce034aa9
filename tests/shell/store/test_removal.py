"""Removing what an agent left: any depth, any modes, never through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_shell.store.removal import empty_directory, remove_tree

pytestmark = pytest.mark.sandbox_hostile


def chain(top: Path, depth: int) -> Path:
    """`depth` directories named `d` below `top`, made one chdir at a time (the path is far
    past PATH_MAX); the last one's path as seen from `top`'s parent is not kept."""
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        with open("f", "w") as handle:
            handle.write("x")
        os.chmod("f", 0)
        os.mkdir("locked")
        os.chmod("locked", 0)
    finally:
        os.chdir(here)
    return top


def test_a_tree_deeper_than_python_recursion_with_unreadable_directories_is_removed(
    tmp_path: Path,
) -> None:
    top = tmp_path / "top"
    top.mkdir()
    chain(top, 1100)  # past the 1,000 frames a recursive removal gets
    os.chmod(top / "d", 0o500)  # unwritable: its entries could not be unlinked as they are
    remove_tree(top)
    assert not top.exists()


def test_a_symlink_in_the_tree_is_removed_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    top = tmp_path / "top"
    (top / "a").mkdir(parents=True)
    (top / "a" / "link").symlink_to(outside, target_is_directory=True)
    (tmp_path / "at-top").symlink_to(outside, target_is_directory=True)
    remove_tree(top)
    remove_tree(tmp_path / "at-top")
    assert not top.exists() and not (tmp_path / "at-top").exists()
    assert (outside / "precious").read_text() == "keep"


def test_emptying_keeps_the_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    chain(home, 1100)
    (home / ".pth").write_text("planted")
    empty_directory(home)
    assert home.is_dir() and list(home.iterdir()) == []


def test_a_missing_path_is_nothing_to_remove(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing" / "deeper")
    remove_tree(tmp_path / "missing")
