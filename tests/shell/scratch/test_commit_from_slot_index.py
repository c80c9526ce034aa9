"""The commit builds on the slot's reset index only when nothing wrote it since the reset."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

from runner_shell.git.file_commit import commit_files
from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.slots import copy_base_index, prepare_slot, slot_path
from tests.helpers.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root)
    (root / "kept.txt").write_text("kept\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def forge(repo: Repo) -> None:
    """An entry added to the slot's reset index behind the runner's back."""
    index = slot_path(repo).parent / "0.index"
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    blob = git(repo.root, "hash-object", "-w", "--stdin", stdin="forged\n").strip()
    args = ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},forged.txt"]
    subprocess.run(args, cwd=repo.root, env=env, check=True, timeout=60)


def test_an_untouched_reset_index_is_copied_and_a_written_one_is_not(
    repo: Repo, tmp_path: Path
) -> None:
    base = repo.head_sha()
    prepare_slot(repo, base)
    target = tmp_path / "copy"
    assert copy_base_index(repo, base, target) and target.is_file()
    assert not copy_base_index(repo, "0" * 40, target)

    forge(repo)

    assert not copy_base_index(repo, base, target)


def test_a_commit_never_takes_an_entry_forged_into_the_slots_index(repo: Repo) -> None:
    base = repo.head_sha()
    prepare_slot(repo, base)
    forge(repo)

    base_index = functools.partial(copy_base_index, repo, base)
    commit = commit_files(
        repo, "runner/r", base, (), [("state.json", b"{}\n")], "s\n", base_index
    ).commit

    files = git(repo.root, "ls-tree", "-r", "--name-only", commit).split()
    assert sorted(files) == [".gitignore", "kept.txt", "state.json"]


def test_a_commit_from_the_reset_index_has_the_tree_read_tree_gives(repo: Repo) -> None:
    base = repo.head_sha()
    prepare_slot(repo, base)
    base_index = functools.partial(copy_base_index, repo, base)

    files = [("a/state.json", b"{}\n")]
    one = commit_files(repo, "runner/r", base, (), files, "s\n", base_index).commit
    git(repo.root, "update-ref", "refs/heads/runner/r", base, one)
    other = commit_files(repo, "runner/r", base, (), files, "s\n").commit

    assert git(repo.root, "rev-parse", f"{one}^{{tree}}") == git(
        repo.root, "rev-parse", f"{other}^{{tree}}"
    )
