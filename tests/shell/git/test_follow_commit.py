"""The run's work tree follows the iteration's commit in one git process, only where it changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.git.file_commit import follow_commit
from runner_shell.git.repo import Repo, open_repo
from tests.helpers.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root)
    for name, text in (("a", "a\n"), ("b", "b\n"), ("d/c", "c\n")):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    return open_repo(root)


def next_commit(repo: Repo) -> tuple[str, str]:
    """A second commit (a changed, d/c deleted, n added) made beside the work tree, the branch
    moved to it, the index and work tree left at the first."""
    root, old = repo.root, repo.head_sha()
    git(root, "worktree", "add", "-q", "--detach", str(root.parent / "other"), old)
    other = root.parent / "other"
    (other / "a").write_text("a2\n")
    (other / "n").write_text("n\n")
    git(other, "rm", "-q", "d/c")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "two")
    new = git(other, "rev-parse", "HEAD").strip()
    git(root, "update-ref", "HEAD", new, old)
    return old, new


def test_changed_paths_are_written_deleted_ones_removed_and_the_rest_left_alone(
    repo: Repo,
) -> None:
    old, new = next_commit(repo)
    (repo.root / "b").write_text("edited meanwhile\n")

    follow_commit(repo, old, new)

    root = repo.root
    assert (root / "a").read_text() == "a2\n" and (root / "n").read_text() == "n\n"
    assert not (root / "d").exists()
    assert (root / "b").read_text() == "edited meanwhile\n"
    assert git(root, "status", "--porcelain") == " M b\n"


def test_after_a_kill_the_index_is_put_back_first_wherever_it_was(repo: Repo) -> None:
    old, new = next_commit(repo)
    git(repo.root, "reset", "-q", "--no-refresh", new, "--", ".")  # the index ahead

    follow_commit(repo, old, new, index_at_old=False)

    assert (repo.root / "a").read_text() == "a2\n" and (repo.root / "n").read_text() == "n\n"
    assert git(repo.root, "status", "--porcelain") == ""
