"""runner_shell/views/inspect.py and history.py in this process: the read-only views of a run
just started, and off its branch the way back to it in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.store.layout import RunnerPaths
from runner_shell.views.history import show_audit
from runner_shell.views.inspect import show_history, show_report, show_status
from tests.helpers.git_repos import git, started_run


def test_status_of_a_new_run_as_lines_and_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    show_status(paths, repo, as_json=True)
    document = json.loads(capsys.readouterr().out)
    assert document["run_id"] == run_id
    show_status(paths, repo, as_json=False)
    lines = capsys.readouterr().out
    assert run_id in lines and "root" in lines


def test_history_and_report_of_a_run_without_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    show_history(paths, repo, None, None, as_json=True)
    history = json.loads(capsys.readouterr().out)
    assert (history["run_id"], history["iterations"], history["warnings"]) == (run_id, [], [])
    show_report(paths, repo, None, as_json=True)
    report = json.loads(capsys.readouterr().out)
    assert report["run_id"] == run_id and report["summary"]["total_executions"] == 0


def test_a_fresh_run_audits_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started_run(tmp_path)
    assert show_audit(RunnerPaths(tmp_path), Repo(tmp_path), None, as_json=False) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_off_the_run_branch_status_names_the_way_back(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    git(tmp_path, "checkout", "-q", "main")
    with pytest.raises(UserFacingError) as refused:
        show_status(RunnerPaths(tmp_path), Repo(tmp_path), as_json=False)
    said = str(refused.value)
    assert said.startswith("branch 'main' holds no run (.runner/state/run_state.json is missing)")
    assert run_id in said and "\n" not in said
