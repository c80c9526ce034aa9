"""A change of the run's checkout or branch made outside the runner is never the agent's.

The agent works in a scratch checkout of its own: a commit, a reset or a checkout of the run's
branch during its iteration is the operator's (or another process's). The operator's commits
that change nothing under `.runner/` are kept when the agent was confined: the iteration is
recorded on them as `interrupted`, no attempt used, its work carried onto them. Anything else
aborts with one line naming what moved and the way back; nothing is committed.
"""

from __future__ import annotations

import attrs
import pytest

from runner_core.changes.import_rules import (
    FILE_MODE,
    Change,
    EntryKind,
    ScratchEntry,
    ScratchListing,
)
from runner_core.history.records import ErrorKind
from runner_core.iteration.effects import (
    Abort,
    Carried,
    CarryWork,
    Commit,
    HeadRead,
    ListScratch,
    ReadHead,
    ScratchListed,
)
from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.machine import start_iteration
from runner_core.run.outside_change import BranchSeen, GitHead
from tests.core.iteration.test_iteration_machine import (
    EXECUTOR_RESULTS,
    HEAD_BEFORE,
    commit_of,
    drive,
    facts,
    kinds,
    outcome_of,
)

A, B = "a" * 40, "b" * 40
BRANCH = "runner/run-1"
WORK = Change("new.txt", FILE_MODE, "3" * 40)
LISTED = ScratchListed(ScratchListing((ScratchEntry("new.txt", EntryKind.FILE, 3, "3" * 40),)))


def iteration(confined: bool = True) -> IterationFacts:
    return attrs.evolve(
        facts(), head=HEAD_BEFORE, scratch=True, checkout="/repo", confined=confined
    )


def seen(*args: object) -> HeadRead:
    return HeadRead(BranchSeen(*args))  # type: ignore[arg-type]


OPERATOR_COMMIT = seen(GitHead(BRANCH, B), B, True, ("src/app.py",))


@pytest.mark.parametrize(
    ("found", "confined", "says"),
    [
        (
            seen(GitHead(BRANCH, B), B, False),
            True,
            f"the run branch {BRANCH} moved from {A[:12]} to {B[:12]} outside the runner during "
            "iteration 1 (a reset or rewrite dropping the run's commits): nothing was committed "
            f"and no attempt used; put it back with 'git -C /repo reset --keep {A}', then run "
            "'runner recover'",
        ),
        (
            seen(GitHead("main", B), A),
            True,
            f"the run's checkout /repo was switched from {BRANCH} to main outside the runner "
            "during iteration 1: nothing was committed and no attempt used; run "
            f"'git -C /repo checkout {BRANCH}', then run 'runner recover'",
        ),
        (seen(GitHead(None, A), A), True, f"to a detached HEAD at {A[:12]}"),
        (seen(GitHead(BRANCH, A), None), True, f"the run branch {BRANCH} was deleted"),
        (
            seen(GitHead(BRANCH, B), B, True, ("src/app.py", ".runner/state/tree.json")),
            True,
            "by commits changing the run's state (.runner/state/tree.json): nothing was "
            "committed and no attempt used",
        ),
        (OPERATOR_COMMIT, False, "the agent ran unsandboxed, so the commits may be its own"),
    ],
    ids=["reset", "checkout", "detach", "deleted", "state-commit", "unconfined"],
)
def test_a_change_the_runner_does_not_take_aborts_with_the_way_back(
    found: HeadRead, confined: bool, says: str
) -> None:
    results = {**EXECUTOR_RESULTS, ListScratch: LISTED, ReadHead: found}
    effects, _ = drive(start_iteration(iteration(confined)), results)

    end = effects[-1]
    assert isinstance(end, Abort)
    assert says in end.message
    assert "\n" not in end.message
    assert Commit not in kinds(effects) and CarryWork not in kinds(effects)


def test_the_operators_commit_is_kept_and_the_iteration_interrupted_on_top_of_it() -> None:
    results = {
        **EXECUTOR_RESULTS,
        ListScratch: LISTED,
        ReadHead: OPERATOR_COMMIT,
        CarryWork: Carried((WORK,)),
    }
    effects, _ = drive(start_iteration(iteration()), results)

    assert CarryWork(A, B, (WORK,)) in effects
    commit = commit_of(effects)
    assert commit.onto == GitHead(BRANCH, B)
    # The agent's work, kept: not judged a pass, on its attempt's ref, carried onto the
    # operator's commits (the next attempt of the node starts from it).
    assert commit.changes == ()
    assert commit.attempt is not None
    assert (commit.attempt.base, commit.attempt.changes) == (B, (WORK,))
    finished = outcome_of(effects)
    assert finished.record.error_kind is ErrorKind.RUNNER
    assert finished.outcome.shown_status == "interrupted"
    assert finished.outcome.operator
    assert finished.outcome.tree == facts().tree  # every attempt as it was
    assert finished.notice is not None
    assert f"the run branch {BRANCH} moved from {A[:12]} to {B[:12]}" in finished.notice
    assert "kept as yours" in finished.notice and "no attempt used" in finished.notice


def test_the_agents_changes_the_operators_commits_also_changed_are_named_and_left_out() -> None:
    results = {
        **EXECUTOR_RESULTS,
        ListScratch: LISTED,
        ReadHead: OPERATOR_COMMIT,
        CarryWork: Carried((), ("new.txt",)),
    }
    effects, _ = drive(start_iteration(iteration()), results)

    assert commit_of(effects).changes == ()
    error = outcome_of(effects).record.error
    assert error is not None and error.startswith("interrupted: ")
    assert "the agent's changes to new.txt were left out" in error


def test_an_operators_commit_with_no_work_to_carry_is_committed_on_it() -> None:
    results = {**EXECUTOR_RESULTS, ReadHead: OPERATOR_COMMIT}
    effects, _ = drive(start_iteration(attrs.evolve(iteration(), scratch=False)), results)

    assert CarryWork not in kinds(effects)
    assert commit_of(effects).onto == GitHead(BRANCH, B)
