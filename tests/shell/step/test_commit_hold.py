"""An iteration's commit holds the parallel loop's state lock from its first write to its
commit (and what must happen then), never while its logs are archived."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

import pytest

from runner_core.iteration.effects import Commit, FileWrite, Place
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.run.outside_change import GitHead
from runner_shell.git import log_archive
from runner_shell.git.repo import open_repo
from runner_shell.step.iteration_commit import commit_iteration
from runner_shell.store.layout import RunnerPaths
from tests.helpers.git_repos import git, new_repo


class Recorded:
    """A lock that records, in `seen`, when it is taken and let go."""

    def __init__(self, seen: list[str]) -> None:
        self.lock = threading.Lock()
        self.seen = seen

    def __enter__(self) -> Recorded:
        self.lock.acquire()
        self.seen.append("held")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.seen.append("released")
        self.lock.release()


def journal(phase: JournalPhase) -> Journal:
    return Journal("run-1", 1, "root.1", "executor", phase, "2026-01-01T00:00:00Z", 1, "cmd")


def test_the_lock_covers_the_writes_the_commit_and_its_baseline_not_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    new_repo(root)
    git(root, "checkout", "-qb", "runner/r")
    repo, paths = open_repo(root), RunnerPaths(root)
    seen: list[str] = []
    real_archive = log_archive.archive_after_commit

    def archive(*args: object, **kwargs: object) -> None:
        seen.append("archived")
        real_archive(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log_archive, "archive_after_commit", archive)
    iter_dir = paths.iter_dir("run-1", 1)
    iter_dir.mkdir(parents=True)
    commit = Commit(
        journal(JournalPhase.WRITING),
        (FileWrite(Place.STATE, "state.json", b"{}\n"), FileWrite(Place.ITERATION, "meta.json")),
        journal(JournalPhase.COMMITTING),
        "runner: iteration 1\n",
    )
    base = GitHead("runner/r", repo.head_sha())

    def committed() -> None:
        seen.append(f"committed {repo.head_sha() != base.sha}")

    hold = Recorded(seen)
    commit_iteration(paths, repo, "run-1", iter_dir, commit, None, base, hold, committed)

    assert seen == ["held", "committed True", "released", "archived"]
    assert not hold.lock.locked()
    assert git(root, "show", "HEAD:.runner/state/state.json") == "{}\n"
    archived = git(root, "ls-tree", "-r", "--name-only", "refs/runner/logs/run-1").split()
    assert archived == ["0-99/1/meta.json"]
