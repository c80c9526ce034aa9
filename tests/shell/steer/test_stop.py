"""runner_shell/steer/stop.py in this process: a stop is asked of a loop that holds the lock,
taken once between iterations, recorded as a `paused` event, and a stale one is forgotten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.steer.stop import (
    clear_stop_request,
    pause_if_requested,
    request_stop,
    stop_request_path,
)
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state
from tests.helpers.git_repos import git, started_run


def test_a_stop_without_a_loop_is_refused_and_leaves_no_request(tmp_path: Path) -> None:
    started_run(tmp_path)
    repo = Repo(tmp_path)
    with pytest.raises(UserFacingError, match=r"^stop: no runner loop is running"):
        request_stop(repo)
    assert not stop_request_path(repo).exists()


def test_the_request_lives_in_the_git_directory_never_in_the_work_tree(tmp_path: Path) -> None:
    started_run(tmp_path)
    repo = Repo(tmp_path)
    with exclusive_lock(repo):
        request_stop(repo)
    path = stop_request_path(repo)
    assert path.read_text(encoding="utf-8").startswith("requested by t <t@t>")
    assert (tmp_path / ".git") in path.parents
    assert git(tmp_path, "status", "--porcelain") == ""


def test_a_request_is_taken_once_and_recorded_as_a_pause(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    state, config = load_run_state(paths), load_config(paths)
    lines: list[str] = []
    assert pause_if_requested(paths, repo, state, config, 0, 1, lines.append) is None
    with exclusive_lock(repo):
        request_stop(repo)
        code = pause_if_requested(paths, repo, state, config, 2, 1, lines.append)
        assert pause_if_requested(paths, repo, state, config, 2, 1, lines.append) is None
    assert code is not None
    assert len(lines) == 1 and lines[0].startswith(f"loop: status=paused run={run_id}")
    events = paths.events_log(run_id).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["type"] for line in events] == ["paused"]
    assert not stop_request_path(repo).exists()


def test_a_request_no_loop_took_is_forgotten_by_the_next_loop(tmp_path: Path) -> None:
    started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    with exclusive_lock(repo):
        request_stop(repo)
    clear_stop_request(repo)
    clear_stop_request(repo)  # none left: nothing to do
    state, config = load_run_state(paths), load_config(paths)
    assert pause_if_requested(paths, repo, state, config, 0, 1, print) is None
