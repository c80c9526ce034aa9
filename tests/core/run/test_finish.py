"""`runner finish`'s decisions: the target branch, when finishing is refused, and the message
of the merge, naming nodes done, iterations and cost."""

from __future__ import annotations

import attrs

from runner_core.history.records import ExecutionHistory
from runner_core.run.finish import (
    FinishFacts,
    finish_message,
    finish_refusal,
    finish_target,
    start_message,
)
from runner_core.run.trailers import parse_trailers

FACTS = FinishFacts("run-1", True, 3, 3, ExecutionHistory().summary(), "main")


def test_the_target_is_into_else_the_recorded_base() -> None:
    assert finish_target("main", None) == "main"
    assert finish_target("main", "dev") == "dev"
    assert finish_target(None, None) is None


def test_a_complete_run_with_a_clean_target_may_finish() -> None:
    assert finish_refusal(FACTS, "main", force=False) is None


def test_refusals_are_one_line_each() -> None:
    incomplete = attrs.evolve(FACTS, complete=False, leaves_passed=1)
    assert finish_refusal(incomplete, "main", force=False) == (
        "finish: run run-1 is not complete (1/3 leaves passed); run 'runner loop', or pass --force"
    )
    assert finish_refusal(incomplete, "main", force=True) is None
    assert finish_refusal(FACTS, None, force=True) == (
        "finish: run run-1 records no branch it started from (pass --into BRANCH)"
    )
    conflicting = attrs.evolve(FACTS, conflicts=("a.py",))
    refusal = finish_refusal(conflicting, "main", force=True)
    assert refusal is not None and "conflicts with runner/run-1 in a.py" in refusal
    assert finish_refusal(FACTS, "runner/run-1", force=False) is not None


def test_the_message_says_what_the_run_did() -> None:
    message = finish_message(FACTS, "main", squash=True)
    assert message.splitlines()[0] == "chore(runner): squash run run-1 into main"
    assert "Run run-1 is complete: 3/3 leaves passed in 0 iterations, cost unknown." in message
    assert dict(parse_trailers(message)) == {"Runner-Run": "run-1"}


def test_the_start_commit_records_its_base_as_a_trailer() -> None:
    assert start_message("run-1", None) == "chore(loop): start run run-1"
    assert dict(parse_trailers(start_message("run-1", "main"))) == {"Runner-Base": "main"}
