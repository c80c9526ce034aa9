"""HEAD read from git's files says what git says, or nothing (git is asked then)."""

from __future__ import annotations

from pathlib import Path

from runner_core.run.outside_change import GitHead
from runner_shell.git.head_files import head_from_files
from runner_shell.git.repo import open_repo
from tests.helpers.git_repos import git, new_repo


def gits_answer(root: Path) -> GitHead:
    sha, name = git(root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD").split()
    return GitHead(name.removeprefix("refs/heads/") if name != "HEAD" else None, sha)


def files_answer(root: Path) -> GitHead | None:
    repo = open_repo(root)
    return head_from_files(repo.git_path("HEAD").parent, repo.common_path(""))


def test_a_loose_a_packed_a_detached_and_a_linked_worktrees_head_are_gits(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    new_repo(root)
    assert files_answer(root) == gits_answer(root) == GitHead("main", gits_answer(root).sha)
    (root / "f").write_text("one\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    git(root, "checkout", "-qb", "runner/run-1")
    assert files_answer(root) == gits_answer(root)

    git(root, "pack-refs", "--all")
    assert not (root / ".git/refs/heads/runner/run-1").exists()
    assert files_answer(root) == gits_answer(root)

    git(root, "worktree", "add", "-q", "-b", "other", str(tmp_path / "linked"))
    assert files_answer(tmp_path / "linked") == gits_answer(tmp_path / "linked")

    git(root, "checkout", "-q", "--detach")
    assert files_answer(root) == gits_answer(root) == GitHead(None, gits_answer(root).sha)


def test_no_commit_yet_or_an_unplain_head_leaves_it_to_git(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    new_repo(root)
    git(root, "checkout", "-q", "--orphan", "empty")
    git(root, "rm", "-rqf", "--cached", ".")
    assert files_answer(root) is None

    git_dir = root / ".git"
    for text in ("ref: refs/heads/.invalid\n", "ref: refs/tags/v1\n", "garbage\n"):
        (git_dir / "HEAD").write_text(text)
        assert head_from_files(git_dir, git_dir) is None
    (git_dir / "HEAD").unlink()
    (git_dir / "HEAD").symlink_to(git_dir / "refs/heads/main")
    assert head_from_files(git_dir, git_dir) is None
