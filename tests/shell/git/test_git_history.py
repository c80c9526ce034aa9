"""The run branch read back from real git as the audit's commit facts: the same facts the
runner committed, since the run's start commit only, and tampering done with git is found."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import RUN_STATE_PATH, TREE_PATH, CommitFacts
from runner_core.testing import Run, runs
from runner_core.testing.commits import run_commits
from runner_shell.git.history import NoStartCommit, read_run_commits
from tests.helpers.git_repos import git, new_repo

SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def commit_facts(root: Path, facts: CommitFacts) -> str:
    """Write the commit's state files and commit them with its message; the new sha."""
    for path, data in ((TREE_PATH, facts.tree_json), (RUN_STATE_PATH, facts.run_state_json)):
        assert data is not None
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", facts.message)
    return git(root, "rev-parse", "HEAD").strip()


def committed_run(root: Path, run: Run) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    start, commits = run_commits(run)
    new_repo(root)
    for facts in (start, *commits):
        commit_facts(root, facts)
    return start, commits


def same_facts(read: CommitFacts, made: CommitFacts) -> bool:
    return (read.message, read.tree_json, read.run_state_json) == (
        made.message,
        made.tree_json,
        made.run_state_json,
    )


@SETTINGS
@given(runs(max_iterations=5))
def test_the_branch_reads_back_as_the_facts_committed_and_audits_clean(run: Run) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        start, commits = committed_run(root, run)
        read_start, read = read_run_commits(root, run.run_id)
        assert same_facts(read_start, start)
        assert len(read) == len(commits)
        assert all(same_facts(got, made) for got, made in zip(read, commits, strict=True))
        assert audit_run(run.run_id, read_start, read).findings == ()


@SETTINGS
@given(runs(max_iterations=5).filter(lambda run: len(run.steps) >= 2))
def test_a_dropped_iteration_and_a_hand_commit_are_found(run: Run) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        start, commits = run_commits(run)
        new_repo(root)
        # The branch a rebase dropping iteration 1 leaves, its conflicts resolved to the later side.
        for facts in (start, *commits[1:]):
            commit_facts(root, facts)
        (root / RUN_STATE_PATH).write_text('{"run_id": null}\n')
        git(root, "commit", "-qam", "reset state")
        start, read = read_run_commits(root, run.run_id)
        report = audit_run(run.run_id, start, read)
        whats = [finding.what for finding in report.findings]
        assert any("an iteration is missing or repeated" in what for what in whats)
        assert f"hand edit {RUN_STATE_PATH}" in whats
        hand = git(root, "rev-parse", "HEAD").strip()
        assert any(
            f.commit == hand and f.line.startswith(f"audit: finding commit={hand[:8]} iter=- ")
            for f in report.findings
        )


def test_the_latest_start_commit_of_the_run_begins_its_history(tmp_path: Path) -> None:
    new_repo(tmp_path)
    (tmp_path / "x").write_text("1")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "chore(loop): start run run-1")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "work")
    start, commits = read_run_commits(tmp_path, "run-1")
    assert start.subject == "chore(loop): start run run-1"
    assert [commit.subject for commit in commits] == ["work"]
    assert start.tree_json is None


def test_a_branch_without_the_start_commit_is_refused_by_name(tmp_path: Path) -> None:
    new_repo(tmp_path)
    with pytest.raises(NoStartCommit, match="no commit 'chore\\(loop\\): start run run-9' on HEAD"):
        read_run_commits(tmp_path, "run-9")


def test_a_message_holding_separator_bytes_reads_back_exactly(tmp_path: Path) -> None:
    new_repo(tmp_path)
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "chore(loop): start run run-1")
    hostile = "fix\x1e\x1fdeadbeef\n\nRunner-Iter: 1\n"
    (tmp_path / ".runner" / "state").mkdir(parents=True)
    (tmp_path / TREE_PATH).write_text("{}")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--cleanup=verbatim", "-m", hostile)
    _, commits = read_run_commits(tmp_path, "run-1")
    assert [(commit.message, commit.touched) for commit in commits] == [(hostile, (TREE_PATH,))]
