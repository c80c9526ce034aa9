"""A commit never takes protected runner files as a stray process left them (finding 9, the
daemon): they are put back before each `git add -A`, checked untouched after it, and staged
again when they were not (runner_shell.step.protected_files.ProtectedStaging, Repo.commit_all)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from runner_shell.git.repo import STAGING_TRIES, GitError, Repo
from runner_shell.step.protected_files import ProtectedStaging, snapshot
from runner_shell.store.layout import RunnerPaths
from tests.helpers.e2e import Project


def staging(project: Project) -> ProtectedStaging:
    paths = RunnerPaths(project.root)
    return ProtectedStaging(paths, snapshot(paths), project.run_id)


def test_files_put_back_and_left_alone_are_untouched(project: Project) -> None:
    guard = staging(project)
    project.config_path.write_text("hijacked = true\n", encoding="utf-8")

    guard.before_staging()

    assert "hijacked" not in project.config_path.read_text(encoding="utf-8")
    assert guard.untouched_since()


@pytest.mark.parametrize("same_bytes", [False, True], ids=["other-bytes", "same-bytes"])
def test_any_write_after_the_put_back_is_a_change(project: Project, same_bytes: bool) -> None:
    guard = staging(project)
    guard.before_staging()
    config = project.config_path.read_bytes()

    # A rewrite of the same bytes may hide a write of other bytes the index took in between.
    project.config_path.write_bytes(config if same_bytes else b"hijacked = true\n")

    assert not guard.untouched_since()


def test_a_hijacked_goal_id_is_put_back(project: Project) -> None:
    guard = staging(project)
    text = project.goal_path.read_text(encoding="utf-8")
    project.goal_path.write_text(text.replace(project.run_id, "hijacked"), encoding="utf-8")

    guard.before_staging()

    assert project.goal_path.read_text(encoding="utf-8") == text
    assert guard.untouched_since()


@attrs.define
class RewrittenOnce:
    """A guard whose files a daemon rewrites during the first staging only."""

    path: Path
    stagings: int = 0

    def before_staging(self) -> None:
        self.stagings += 1
        self.path.write_text("restored\n", encoding="utf-8")

    def untouched_since(self) -> bool:
        if self.stagings == 1:
            self.path.write_text("hijacked\n", encoding="utf-8")  # after add took it: stage again
            self.path.write_text("restored\n", encoding="utf-8")
            return False
        return True


def test_a_commit_stages_again_until_the_guard_says_untouched(project: Project) -> None:
    guarded = RewrittenOnce(project.root / "note.txt")

    Repo(project.root).commit_all("guarded", guarded)

    assert guarded.stagings == 2
    assert project.git("show", "HEAD:note.txt") == "restored\n"
    assert project.git("status", "--porcelain") == ""


@attrs.define
class AlwaysRewritten:
    stagings: int = 0

    def before_staging(self) -> None:
        self.stagings += 1

    def untouched_since(self) -> bool:
        return False


def test_files_that_keep_changing_stop_the_commit_in_one_line(project: Project) -> None:
    head = project.git("rev-parse", "HEAD")
    guarded = AlwaysRewritten()

    with pytest.raises(GitError) as raised:
        Repo(project.root).commit_all("never", guarded)

    assert guarded.stagings == STAGING_TRIES
    assert "kept changing while they were staged" in str(raised.value)
    assert project.git("rev-parse", "HEAD") == head
