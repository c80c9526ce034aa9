"""The operator commits `runner serve` keeps (runner_shell/views/operator_log.py): each reading
gives what `operator_actions` gives, reading only the commits the run's branch gained while it
only moved forward, and reading them all again after a reset or a merge."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from runner_core.run.branches import branch_for
from runner_core.run.operations import OperatorAction, operation_message
from runner_core.run.trailers import NodeOperation
from runner_shell.git.repo import Repo
from runner_shell.views.operator_log import OperatorLog, operator_actions

RUN = "run-00000001"
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@localhost"]


def git(root: Path, *args: str) -> str:
    found = subprocess.run(["git", *IDENTITY, *args], cwd=root, check=True, capture_output=True)
    return found.stdout.decode().strip()


def commit(root: Path, message: str) -> str:
    git(root, "commit", "--quiet", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def acted(root: Path, node_id: str, before: int = 2) -> str:
    action = OperatorAction(RUN, NodeOperation.SKIP, node_id, "t", before)
    return commit(root, operation_message(action))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    git(tmp_path, "init", "--quiet", f"--initial-branch={branch_for(RUN)}")
    commit(tmp_path, "first")
    acted(tmp_path, "root.1")
    commit(tmp_path, f"chore(loop): run {RUN} iter 1")
    return Repo(tmp_path)


def test_a_branch_that_moved_forward_adds_its_new_commits_actions(repo: Repo) -> None:
    log = OperatorLog()
    assert log.read(repo, RUN) == operator_actions(repo, RUN)
    commit(repo.root, f"chore(loop): run {RUN} iter 2")
    acted(repo.root, "root.2")
    commit(repo.root, f"chore(loop): run {RUN} iter 3")
    actions = log.read(repo, RUN)
    assert actions == operator_actions(repo, RUN)
    assert [action.node_id for action in actions] == ["root.1", "root.2"]
    assert log.folds == 1


def test_an_unmoved_branch_gives_back_the_same_actions(repo: Repo) -> None:
    log = OperatorLog()
    first = log.read(repo, RUN)
    assert log.read(repo, RUN) is first and log.folds == 0


@pytest.mark.parametrize("rewrite", ["reset", "merge"])
def test_a_reset_or_a_merge_reads_every_commit_again(repo: Repo, rewrite: str) -> None:
    log = OperatorLog()
    log.read(repo, RUN)
    if rewrite == "reset":
        git(repo.root, "reset", "--quiet", "--hard", "HEAD~2")
        acted(repo.root, "root.3")
    else:
        git(repo.root, "checkout", "--quiet", "-b", "side", "HEAD~1")
        acted(repo.root, "root.4")
        git(repo.root, "checkout", "--quiet", branch_for(RUN))
        git(repo.root, "merge", "--quiet", "--no-ff", "-m", "merge side", "side")
    actions = log.read(repo, RUN)
    assert actions == operator_actions(repo, RUN)
    assert log.folds == 0
    expected = ["root.3"] if rewrite == "reset" else ["root.1", "root.4"]
    assert sorted(action.node_id for action in actions) == sorted(expected)


def test_no_run_or_no_commit_has_no_actions(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet")
    assert OperatorLog().read(Repo(tmp_path), RUN) == () == OperatorLog().read(Repo(tmp_path), None)


def test_without_the_run_branch_the_actions_are_heads(repo: Repo) -> None:
    git(repo.root, "checkout", "--quiet", "-b", "main")
    acted(repo.root, "root.5")
    git(repo.root, "branch", "--quiet", "-D", branch_for(RUN))
    assert [action.node_id for action in operator_actions(repo, RUN)] == ["root.1", "root.5"]


def test_before_a_first_commit_there_are_no_actions(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet", "--initial-branch=main")
    assert operator_actions(Repo(tmp_path), RUN) == ()


def test_a_branch_moved_forward_is_read_by_one_git_call(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = OperatorLog()
    log.read(repo, RUN)
    acted(repo.root, "root.5")
    calls: list[tuple[str, ...]] = []
    original = Repo.git

    def counted(self: Repo, *args: str, **options: Any) -> Any:
        calls.append(args)
        return original(self, *args, **options)

    monkeypatch.setattr(Repo, "git", counted)
    actions = log.read(repo, RUN)
    assert len(calls) == 1 and log.folds == 1
    assert actions == operator_actions(repo, RUN)
    assert log.tip == git(repo.root, "rev-parse", "HEAD")
