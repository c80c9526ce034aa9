"""runner_shell/steer/finish.py in this process: an incomplete run is refused before anything
changes; `--force` merges the run's work (never its `.runner/` state) into the branch it was
started from, moves the user's checkout there, and a finished run is finished only once."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.steer.finish import already_finished, finish_run
from runner_shell.store.layout import RunnerPaths
from tests.helpers.git_repos import git, started_run


def worked_run(root: Path) -> str:
    run_id = started_run(root)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "work")
    return run_id


def test_an_incomplete_run_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    run_id = worked_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    main_before = git(tmp_path, "rev-parse", "main")
    with pytest.raises(UserFacingError) as refused:
        finish_run(paths, repo, None, squash=False, delete=False, force=False)
    assert str(refused.value) == (
        f"finish: run {run_id} is not complete (0/1 leaves passed); run 'runner loop', "
        "or pass --force"
    )
    assert git(tmp_path, "rev-parse", "main") == main_before
    assert git(tmp_path, "branch", "--show-current").strip() == f"runner/{run_id}"
    assert already_finished(repo, run_id) is None


def test_a_forced_finish_merges_the_work_without_the_state_once(tmp_path: Path) -> None:
    run_id = worked_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    run_head = git(tmp_path, "rev-parse", f"runner/{run_id}").strip()
    finished = finish_run(paths, repo, None, squash=False, delete=False, force=True)
    assert (finished.run_id, finished.target, finished.already) == (run_id, "main", False)
    assert git(tmp_path, "rev-parse", "main").strip() == finished.commit
    parents = git(tmp_path, "log", "-1", "--format=%P", "main").split()
    assert parents[1] == run_head
    assert git(tmp_path, "ls-tree", "-r", "--name-only", "main").split() == [
        ".gitignore",
        "calc.py",
    ]
    assert git(tmp_path, "branch", "--show-current").strip() == "main"
    assert git(tmp_path, "status", "--porcelain") == ""
    again = already_finished(repo, run_id)
    assert again is not None and again.already and again.commit == finished.commit


def test_a_squash_has_one_parent_and_delete_removes_the_run_branch(tmp_path: Path) -> None:
    run_id = worked_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    base = git(tmp_path, "rev-parse", "main").strip()
    finished = finish_run(paths, repo, None, squash=True, delete=True, force=True)
    assert git(tmp_path, "log", "-1", "--format=%P", "main").split() == [base]
    assert finished.branch_deleted
    assert git(tmp_path, "branch", "--list", f"runner/{run_id}") == ""
