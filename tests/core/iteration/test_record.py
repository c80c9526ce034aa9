"""Specification of runner_core/iteration/record.py: the run branch takes an iteration's files
only when it was judged a pass; the files of any other go to its attempt ref, which the node's
next attempt starts from, and its prompt says so."""

from __future__ import annotations

from typing import Any

import pytest

from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.history.records import ErrorKind
from runner_core.iteration.record import (
    Resumed,
    attempt_ref,
    failure_reason,
    resume_from,
    resumed_note,
    split_changes,
)
from runner_core.run.trailers import (
    parse_trailers,
    record_from_trailers,
    record_trailers,
    render_trailers,
)
from runner_core.tree.model import AgentStatus, GuardOutcome
from tests.helpers.records import record

SRC = Change("src/a.js", "100644", "a" * 40)
NOTE = Change(".runner/state/questions.md", "100644", "b" * 40)
GONE = Change("old.txt", None, None)
SUBJECT = "chore(loop): run run-1 iter 3 node a status=done guard=fail"
BASE = "c" * 40


def test_a_pass_takes_every_change_onto_the_line_and_sets_nothing_aside() -> None:
    found = split_changes(ImportDecision((GONE, SRC, NOTE)), True, "ref", BASE, SUBJECT)
    assert (found.line, found.attempt, found.attempt_files) == ((GONE, SRC, NOTE), None, 0)


def test_anything_else_takes_only_the_notes_and_keeps_every_change_on_its_attempt_ref() -> None:
    found = split_changes(
        ImportDecision((GONE, SRC, NOTE)), False, attempt_ref("run-1", 3), BASE, SUBJECT
    )

    assert found.line == (NOTE,)
    assert found.attempt is not None
    assert (found.attempt.ref, found.attempt.base) == ("refs/runner/attempts/run-1/3", BASE)
    assert found.attempt.changes == (GONE, SRC, NOTE)
    assert found.attempt.message.startswith("runner attempt: run run-1 iter 3 node a")
    assert found.attempt_files == 2


def test_notes_carried_onto_a_moved_head_replace_the_ones_listed() -> None:
    carried = Change(NOTE.path, "100644", "d" * 40)
    found = split_changes(
        ImportDecision((SRC, NOTE)), False, "ref", BASE, SUBJECT, line_notes=(carried,)
    )
    assert found.line == (carried,)


def test_an_iteration_that_changed_only_notes_makes_no_attempt() -> None:
    found = split_changes(ImportDecision((NOTE,)), False, "ref", BASE, SUBJECT)
    assert (found.line, found.attempt) == ((NOTE,), None)


def test_a_refused_import_takes_nothing_onto_the_line_and_keeps_what_it_set_aside() -> None:
    refused = ImportDecision(agent_error="tests/t.sh is protected", set_aside=(SRC, NOTE))
    found = split_changes(refused, False, "ref", BASE, SUBJECT)
    assert found.line == ()
    assert found.attempt is not None and found.attempt.changes == (SRC, NOTE)


def test_the_next_attempt_of_the_same_node_resumes_from_files_set_aside() -> None:
    failed = record(3, "a", guard=GuardOutcome.FAIL, attempt_files=2)
    assert resume_from("a", failed) == 3
    assert resume_from("b", failed) is None  # every other node starts from the line
    assert resume_from("a", record(3, "a", guard=GuardOutcome.FAIL)) is None  # none set aside
    assert resume_from("a", None) is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"guard": GuardOutcome.FAIL}, "the guard failed on them (its failure is below)"),
        (
            {"status": AgentStatus.RETRY, "guard": GuardOutcome.SKIPPED},
            "you answered retry (your summary is below)",
        ),
        (
            {
                "status": AgentStatus.RETRY,
                "guard": GuardOutcome.SKIPPED,
                "error_kind": ErrorKind.AGENT,
                "error": "tests/t.sh is protected",
            },
            "tests/t.sh is protected",
        ),
        (
            {
                "status": AgentStatus.RETRY,
                "guard": GuardOutcome.SKIPPED,
                "error_kind": ErrorKind.RUNNER,
                "error": "executor agent timed out",
            },
            "the runner stopped it: executor agent timed out",
        ),
    ],
)
def test_the_prompt_says_why_the_previous_attempt_was_not_committed(
    changes: dict[str, Any], reason: str
) -> None:
    assert failure_reason(record(3, "a", **changes)) == reason


def test_the_prompt_says_the_files_are_in_the_checkout_or_why_not() -> None:
    carried = resumed_note(Resumed(3, "the guard failed"))
    assert carried.startswith("Your previous attempt's files (iteration 3) are in your checkout")
    assert "because the guard failed" in carried
    conflicting = resumed_note(Resumed(3, "the guard failed", ("src/index.js",)))
    assert "are not in your checkout: they conflict with work merged since (src/index.js)" in (
        conflicting
    )


def test_attempt_files_travel_in_meta_and_trailers_and_only_when_some_were_set_aside() -> None:
    failed = record(3, "a", guard=GuardOutcome.FAIL, attempt_files=2)
    rendered = render_trailers(record_trailers(failed))
    assert "Runner-Attempt-Files: 2\n" in rendered
    message = f"{SUBJECT}\n\n{rendered}"
    assert record_from_trailers(parse_trailers(message)) == failed
    assert "Runner-Attempt-Files" not in render_trailers(record_trailers(record(3, "a")))
