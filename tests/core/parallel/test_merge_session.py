"""A merge session's decisions (runner_core.parallel.merge_session): which conflicts it is
offered, how its answer reads, what of its work is taken and what that makes of the job."""

from __future__ import annotations

import json

import attrs
import pytest

from runner_core.changes.import_rules import FILE_MODE, SYMLINK_MODE, Change, ImportDecision
from runner_core.history.meta_shape import MERGE_SESSION_ENDS
from runner_core.history.records import TokenUsage
from runner_core.iteration.machine import start_iteration
from runner_core.parallel.merge_session import (
    MAX_SESSION_FILE_BYTES,
    MAX_SESSION_FILES,
    MERGER_LOG,
    MERGER_OUTPUT,
    MERGER_PROMPT,
    MarkedFile,
    MergerAnswer,
    SessionEnd,
    marker_line,
    may_offer,
    offered,
    read_answer,
    resolution_problem,
    resolved_changes,
    session_line,
    session_prompt,
    with_spent,
)
from runner_core.views.show import MERGER_FILES
from tests.core.iteration.test_iteration_machine import facts
from tests.helpers.trees import tree

MARKED = b"a\n<<<<<<<< head\nfrom a\n|||||||| base\nzero\n======== \nfrom b\n>>>>>>>> mine\nz\n"
SHARED = MarkedFile("shared.txt", FILE_MODE, MARKED, 8)


def change(path: str, oid: str = "1" * 40, mode: str | None = FILE_MODE) -> Change:
    return Change(path, mode, oid)


def test_the_session_ends_are_the_words_meta_json_may_hold() -> None:
    assert {end.value for end in SessionEnd} == MERGE_SESSION_ENDS


@pytest.mark.parametrize(
    ("enabled", "conflicts", "files", "expected"),
    [
        (True, ["shared.txt"], [SHARED], True),
        (False, ["shared.txt"], [SHARED], False),  # `[parallel] merge_sessions = false`
        (True, ["shared.txt", "gone.txt"], [SHARED], False),  # one is no line conflict
        (True, [], [], False),
        (True, [f"f{n}" for n in range(MAX_SESSION_FILES + 1)], [], False),
    ],
)
def test_a_session_is_offered_only_line_conflicts_when_sessions_are_on(
    enabled: bool, conflicts: list[str], files: list[MarkedFile], expected: bool
) -> None:
    assert offered(enabled, conflicts, files) is expected


def test_a_file_too_large_is_not_offered() -> None:
    large = MarkedFile("big.txt", FILE_MODE, b"x" * (MAX_SESSION_FILE_BYTES + 1), 7)
    assert not offered(True, ["big.txt"], [large])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"status": "resolved", "summary": "both kept"}', MergerAnswer(True, "both kept")),
        ('{"status": "gave_up", "summary": "cannot"}', MergerAnswer(False, "cannot")),
        (None, "the merge session wrote no output"),
        ("not json", "the merge session's output is not JSON"),
        ("[" * 5_000 + "]" * 5_000, "the merge session's output is not JSON"),  # too deep
        (
            '{"status": "done", "summary": "x"}',
            "the merge session's output does not match its schema: status: must be resolved "
            "or gave_up, got 'done'",
        ),
        (
            '{"status": "resolved"}',
            "the merge session's output does not match its schema: summary: missing",
        ),
    ],
)
def test_the_answer_reads_or_says_why_it_is_none(
    text: str | None, expected: MergerAnswer | str
) -> None:
    assert read_answer(text) == expected


JOINED = b"a\nfrom a\nfrom b\nz\n"


@pytest.mark.parametrize(
    ("decision", "written", "expected"),
    [
        (ImportDecision((change("shared.txt"),)), {"shared.txt": JOINED}, None),
        (
            ImportDecision((change("other.txt"), change("shared.txt"))),
            {"shared.txt": JOINED, "other.txt": b"x\n"},
            "the merge session changed files that did not conflict: other.txt",
        ),
        (
            ImportDecision((change("shared.txt"),), discarded=(".runner/state/tree.json",)),
            {"shared.txt": JOINED},
            "the merge session changed files that did not conflict: .runner/state/tree.json",
        ),
        (
            ImportDecision((change("shared.txt", mode=None, oid=None),)),  # type: ignore[arg-type]
            {},
            "shared.txt: the merge session removed it or made it other than a file",
        ),
        (
            ImportDecision((change("shared.txt", mode=SYMLINK_MODE),)),
            {},
            "shared.txt: the merge session removed it or made it other than a file",
        ),
        (
            ImportDecision((change("shared.txt"),)),
            {"shared.txt": b"a\nfrom a\n========\nz\n"},
            "shared.txt: a conflict marker is left at line 3",
        ),
        (ImportDecision(), {}, "shared.txt: a conflict marker is left at line 2"),  # untouched
        (ImportDecision(agent_error="a FIFO"), {}, "a FIFO"),
    ],
)
def test_only_the_conflicted_files_joined_without_a_marker_are_taken(
    decision: ImportDecision, written: dict[str, bytes], expected: str | None
) -> None:
    assert resolution_problem(decision, [SHARED], written) == expected


def test_a_line_that_only_begins_as_a_shorter_marker_is_no_marker() -> None:
    text = b"=======\n<<<<<<< head\n>>>>>>>\n"  # 7 long: the markers here are 8
    assert marker_line(text, 8) is None
    assert marker_line(text + b"======== \n", 8) == 4


def test_the_resolved_changes_are_the_jobs_with_its_conflicted_files_the_sessions() -> None:
    joined = (change("a.txt", "a" * 40), change("z.txt", "z" * 40))
    session = ImportDecision((change("shared.txt", "5" * 40),))
    assert resolved_changes(joined, [SHARED], session) == (
        change("a.txt", "a" * 40),
        change("shared.txt", "5" * 40),
        change("z.txt", "z" * 40),
    )


def test_the_prompt_names_the_leaf_the_jobs_summary_and_each_file_with_its_markers() -> None:
    template = "${node_id} ${node_title} ${node_goal}\n${job_summary}\n${conflicted_files}\n$x"
    leaf = tree("root.2", title="Add b", goal="Export b.")
    text = session_prompt(template, leaf, [SHARED], "wrote b")
    assert text == "root.2 Add b Export b.\nwrote b\n- `shared.txt` (markers of 8 characters)\n$x"
    assert "(none)" in session_prompt(template, leaf, [SHARED], "")


@pytest.mark.parametrize(
    ("end", "reason", "expected"),
    [
        (SessionEnd.GAVE_UP, "both\n lines", "the merge session gave up: both lines"),
        (SessionEnd.REJECTED, "x", "the merge session was refused: x"),
        (
            SessionEnd.GUARD_FAILED,
            "",
            "the merge session joined them, but the guard fails on its result",
        ),
    ],
)
def test_a_session_that_did_not_resolve_says_so_on_one_line(
    end: SessionEnd, reason: str, expected: str
) -> None:
    assert session_line(end, reason) == expected


def test_the_output_schema_is_shipped_beside_the_others() -> None:
    from runner_core.validation.schema import schema_text

    schema = json.loads(schema_text("merger_output.schema.json"))
    assert schema["properties"]["status"]["enum"] == ["resolved", "gave_up"]


@pytest.mark.parametrize(
    ("before", "spent", "after"),
    [
        ((None, None), (TokenUsage(1, 2, 3), 0.5), (TokenUsage(1, 2, 3), 0.5)),
        ((TokenUsage(1, 1, 1), 1.0), (TokenUsage(1, 2, 3), 0.5), (TokenUsage(2, 3, 4), 1.5)),
        ((TokenUsage(1, 1, 1), 1.0), (None, None), (TokenUsage(1, 1, 1), 1.0)),
    ],
)
def test_the_iteration_counts_what_both_agents_spent(
    before: tuple[TokenUsage | None, float | None],
    spent: tuple[TokenUsage | None, float | None],
    after: tuple[TokenUsage | None, float | None],
) -> None:
    machine = attrs.evolve(start_iteration(facts()), tokens=before[0], cost_usd=before[1])
    summed = with_spent(machine, *spent)
    assert (summed.tokens, summed.cost_usd) == after


def test_show_names_the_files_the_session_leaves() -> None:
    assert ", ".join((MERGER_PROMPT, MERGER_LOG, MERGER_OUTPUT)) == MERGER_FILES


@pytest.mark.parametrize(
    ("enabled", "count", "expected"),
    [
        (True, 1, True),
        (True, MAX_SESSION_FILES, True),
        (True, 0, False),
        (False, 1, False),
        (True, MAX_SESSION_FILES + 1, False),
    ],
)
def test_conflicts_are_marked_only_when_they_may_be_offered(
    enabled: bool, count: int, expected: bool
) -> None:
    assert may_offer(enabled, [f"f{n}" for n in range(count)]) is expected
