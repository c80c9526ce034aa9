"""An iteration's record says how its merge session ended (runner_core.history.execution,
runner_core.run.trailers): `merge_session` in meta.json and `Runner-Merge-Session` in the
commit, each written only when one ran; every view shows a resolved one's `done` as `merged`."""

from __future__ import annotations

import attrs
import pytest

from runner_core.history.records import (
    DamagedRecord,
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    record_from_meta,
    record_to_meta,
)
from runner_core.iteration.recovery import MERGED, STATUS_WORDS, shown_status
from runner_core.run.chain import canonical_record
from runner_core.run.trailers import (
    MERGE_SESSION,
    DamagedTrailer,
    parse_trailers,
    record_from_trailers,
    record_trailers,
    render_trailers,
)
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.history import record_status, render_history
from runner_core.views.web import node_detail
from tests.helpers.records import record
from tests.helpers.trees import tree

MERGED_RECORD = record(2, "b", AgentStatus.DONE, GuardOutcome.PASS, merge_session="resolved")
GAVE_UP = record(
    2,
    "b",
    AgentStatus.RETRY,
    GuardOutcome.SKIPPED,
    error_kind=ErrorKind.RUNNER,
    error="files do not merge ...; the merge session gave up: cannot",
    attempts_after=0,
    merge_rerun=True,
    merge_session="gave_up",
)


@pytest.mark.parametrize("written", [MERGED_RECORD, GAVE_UP])
def test_a_merge_session_is_written_last_in_meta_json_and_read_back(
    written: ExecutionRecord,
) -> None:
    meta = record_to_meta(written)
    assert list(meta)[-1] == "merge_session"
    assert record_from_meta(meta) == written


def test_a_record_without_a_session_writes_none() -> None:
    meta = record_to_meta(record(1))
    assert "merge_session" not in meta
    assert record_from_meta(meta).merge_session is None
    assert MERGE_SESSION not in dict(record_trailers(record(1)))
    assert b"Merge-Session" not in canonical_record(record(1))


def test_a_merge_session_of_another_word_is_named() -> None:
    meta = {**record_to_meta(record(1)), "merge_session": "joined"}
    with pytest.raises(DamagedRecord) as raised:
        record_from_meta(meta)
    assert raised.value.field == "merge_session"


@pytest.mark.parametrize("written", [MERGED_RECORD, GAVE_UP])
def test_the_trailers_carry_the_session_and_give_it_back(written: ExecutionRecord) -> None:
    trailers = record_trailers(written)
    assert trailers[-1][0] == MERGE_SESSION
    message = "subject\n\n" + render_trailers(trailers)
    assert record_from_trailers(parse_trailers(message)) == written


def test_a_session_trailer_of_another_word_is_damaged() -> None:
    trailers = dict(record_trailers(MERGED_RECORD))
    trailers[MERGE_SESSION] = "joined"
    with pytest.raises((DamagedTrailer, DamagedRecord)):
        record_from_trailers(trailers)


def test_a_resolved_session_shows_merged_and_one_that_did_not_shows_conflict() -> None:
    assert record_status(MERGED_RECORD) == MERGED == "merged"
    assert record_status(GAVE_UP) == "conflict"
    assert MERGED in STATUS_WORDS
    # Only a done is shown merged: nothing else a session's record may say is.
    assert shown_status("retry", None, None, merge_session="resolved") == "retry"
    rows = render_history("run-1", (record(1, "a"), MERGED_RECORD, GAVE_UP), None)[2:]
    assert [row.split()[3] for row in rows] == ["done", "merged", "conflict"]


def test_the_web_views_node_panel_shows_the_same_words() -> None:
    records = ExecutionHistory((GAVE_UP, attrs.evolve(MERGED_RECORD, iteration=3)))
    detail = node_detail(tree("root", tree("b")), records, "b")
    assert detail is not None
    assert [e["shown_status"] for e in detail["executions"]] == ["conflict", "merged"]
