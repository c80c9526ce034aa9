"""Specification of runner_core/history/judged_checks.py through `audit_run`: every commit of the
run branch that changes files outside `.runner/` is an iteration judged a pass, and every
iteration that set files aside has its attempt ref on the commit it started from."""

from __future__ import annotations

import attrs

from runner_core import dumps_tree
from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import RUN_STATE_PATH, TREE_PATH, CommitFacts
from runner_core.audit.judged_checks import AttemptFacts
from runner_core.history.records import ExecutionRecord
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.trailers import iteration_commit_message
from runner_core.tree.model import AgentStatus, GuardOutcome, Node
from tests.helpers.records import record
from tests.helpers.trees import tree

START_SHA, ONE = "s" * 40, "1" * 40
BEFORE = tree("root", tree("a"))


def _commit(
    sha: str, iteration: ExecutionRecord, after: Node, outside: tuple[str, ...] = ()
) -> CommitFacts:
    data = dumps_tree(after).encode()
    link = chain_link(chain_seed("run-1"), iteration, data)
    subject = f"chore(loop): run run-1 iter 1 node a status={iteration.status.value}"
    message = iteration_commit_message(subject, iteration, link)
    run_state = f'{{"run_id": "run-1", "next_iter": 2, "chain": "{link}"}}'.encode()
    return CommitFacts(sha, message, data, run_state, (TREE_PATH, RUN_STATE_PATH), None, outside)


START = CommitFacts(START_SHA, "chore(loop): start run run-1\n", dumps_tree(BEFORE).encode(), b"{}")
FAILED = record(1, "a", guard=GuardOutcome.FAIL, attempt_files=1)
FAILED_TREE = tree("root", tree("a", attempts=1))


def _whats(found: tuple[object, ...]) -> list[str]:
    return [finding.what for finding in found]  # type: ignore[attr-defined]


def _without_run_state(whats: list[str]) -> list[str]:
    return [what for what in whats if "run_state" not in what and "Runner-Chain" not in what]


def test_a_failed_iteration_with_its_attempt_ref_on_its_start_is_clean() -> None:
    report = audit_run(
        "run-1",
        START,
        (_commit(ONE, FAILED, FAILED_TREE),),
        {1: AttemptFacts("a" * 40, START_SHA)},
    )
    assert _without_run_state(_whats(report.findings)) == []


def test_a_failed_iteration_whose_commit_changes_files_is_a_finding() -> None:
    report = audit_run(
        "run-1",
        START,
        (_commit(ONE, FAILED, FAILED_TREE, ("src/a.js",)),),
        {1: AttemptFacts("a" * 40, START_SHA)},
    )
    assert (
        "iteration not judged a pass (status=done guard=fail) changes files outside .runner/: "
        "src/a.js" in _whats(report.findings)
    )


def test_a_pass_may_change_files() -> None:
    passed = record(1, "a")
    after = tree("root", tree("a", passes=True))
    report = audit_run("run-1", START, (_commit(ONE, passed, after, ("src/a.js",)),))
    assert not [w for w in _whats(report.findings) if "outside .runner/" in w]


def test_a_missing_or_misplaced_attempt_ref_and_a_stray_one_are_findings() -> None:
    commits = (_commit(ONE, FAILED, FAILED_TREE),)
    missing = audit_run("run-1", START, commits, {})
    misplaced = audit_run("run-1", START, commits, {1: AttemptFacts("a" * 40, "f" * 40)})
    stray = audit_run(
        "run-1",
        START,
        (_commit(ONE, attrs.evolve(FAILED, attempt_files=0), FAILED_TREE),),
        {1: AttemptFacts("a" * 40, START_SHA)},
    )
    assert "refs/runner/attempts/run-1/1 is missing (1 files set aside)" in _whats(missing.findings)
    assert "refs/runner/attempts/run-1/1 is not on the commit iteration 1 started from" in (
        _whats(misplaced.findings)
    )
    assert "refs/runner/attempts/run-1/1 holds files no iteration set aside" in _whats(
        stray.findings
    )


def test_a_commit_no_iteration_made_that_changes_files_is_a_finding() -> None:
    hand = CommitFacts("h" * 40, "a fix\n", dumps_tree(BEFORE).encode(), b"{}", (), None, ("x",))
    report = audit_run("run-1", START, (hand,))
    assert _whats(report.findings) == [
        "changes files outside .runner/ with no iteration judging them: x"
    ]


def test_a_retry_is_no_pass() -> None:
    retried = record(1, "a", status=AgentStatus.RETRY, guard=GuardOutcome.SKIPPED)
    report = audit_run("run-1", START, (_commit(ONE, retried, FAILED_TREE, ("y",)),))
    assert any("status=retry guard=skipped" in w for w in _whats(report.findings))


def test_a_commit_no_iteration_made_is_judged_by_the_next_iteration_that_passes() -> None:
    """The operator's commit the runner kept: the next pass's guard ran on the line holding it;
    a failed iteration after it judges nothing."""
    hand = CommitFacts("h" * 40, "a fix\n", dumps_tree(BEFORE).encode(), b"{}", (), None, ("x",))
    passed = _commit(ONE, record(1, "a"), tree("root", tree("a", passes=True)))
    failed = _commit(ONE, FAILED, FAILED_TREE)

    judged = audit_run("run-1", START, (hand, passed))
    not_judged = audit_run("run-1", START, (hand, failed), {1: AttemptFacts("a" * 40, "h" * 40)})

    assert not [w for w in _whats(judged.findings) if "outside .runner/" in w]
    assert "changes files outside .runner/ with no iteration judging them: x" in _whats(
        not_judged.findings
    )
