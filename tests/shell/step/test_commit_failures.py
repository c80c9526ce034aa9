"""A commit that fails once the iteration's files are written is the committer's answer, never
its exception: `CommitFailed` names the part that did not happen (the commit, or the logs'
archive after it) with git's or the archive's line, and the journal stays for 'runner recover'."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.iteration.effects import (
    Commit,
    CommitFailed,
    CommitPart,
    Done,
    FileWrite,
    Place,
)
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_shell.git import log_archive
from runner_shell.git.log_archive import ArchiveError
from runner_shell.git.repo import open_repo
from runner_shell.step.iteration_store import GitCommitter
from runner_shell.step.lock_and_journal import journal_path
from runner_shell.store.layout import RunnerPaths
from tests.helpers.git_repos import git, new_repo


def journal(phase: JournalPhase) -> Journal:
    return Journal("run-1", 1, "root.1", "executor", phase, "2026-01-01T00:00:00Z", 1, "cmd")


COMMIT = Commit(
    journal(JournalPhase.WRITING),
    (FileWrite(Place.STATE, "state.json", b"{}\n"), FileWrite(Place.ITERATION, "meta.json")),
    journal(JournalPhase.COMMITTING),
    "runner: iteration 1\n",
)


def committer(tmp_path: Path) -> GitCommitter:
    root = tmp_path / "repo"
    new_repo(root)
    git(root, "checkout", "-qb", "runner/r")
    paths = RunnerPaths(root)
    iter_dir = paths.iter_dir("run-1", 1)
    iter_dir.mkdir(parents=True)
    return GitCommitter(paths, open_repo(root), "run-1", iter_dir)


def test_a_commit_git_refuses_is_answered_logged_but_not_committed(tmp_path: Path) -> None:
    port = committer(tmp_path)
    (port.paths.root / ".git" / "index.lock").write_text("")

    answer = port.commit(COMMIT)

    assert isinstance(answer, CommitFailed), answer
    assert answer.failed is CommitPart.COMMIT
    assert answer.message.startswith("git "), answer.message
    assert (port.paths.state_dir / "state.json").read_bytes() == b"{}\n"  # logged
    assert journal_path(port.repo).exists()


def test_an_archive_refused_after_the_commit_is_answered_committed_but_not_archived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = committer(tmp_path)
    head = port.repo.head_sha()

    def refused(*args: object, **kwargs: object) -> bool:
        raise ArchiveError("archive refused by the test")

    monkeypatch.setattr(log_archive, "archive_after_commit", refused)

    answer = port.commit(COMMIT)

    assert answer == CommitFailed(CommitPart.ARCHIVE, "archive refused by the test")
    assert port.repo.head_sha() != head  # committed
    assert journal_path(port.repo).exists()


def test_a_commit_and_its_archive_made_are_answered_done(tmp_path: Path) -> None:
    port = committer(tmp_path)

    assert port.commit(COMMIT) == Done()
    assert not journal_path(port.repo).exists()
