"""An iteration's record says whether it was a merge rerun (runner_core.history.execution,
runner_core.run.trailers): `merge_rerun` in meta.json and `Runner-Merge-Rerun` in the commit,
each written only when true, so every other record keeps its bytes and its chain link."""

from __future__ import annotations

import pytest

from runner_core.history.records import (
    DamagedRecord,
    ErrorKind,
    record_from_meta,
    record_to_meta,
)
from runner_core.run.chain import canonical_record
from runner_core.run.trailers import (
    MERGE_RERUN,
    DamagedTrailer,
    parse_trailers,
    record_from_trailers,
    record_trailers,
    render_trailers,
)
from runner_core.tree.model import AgentStatus, GuardOutcome
from tests.helpers.records import record

RERUN = record(
    3,
    "root.2",
    AgentStatus.RETRY,
    GuardOutcome.SKIPPED,
    error_kind=ErrorKind.RUNNER,
    error="src/a.py: both jobs changed line 1",
    attempts_after=0,
    merge_rerun=True,
)


def test_a_record_is_no_merge_rerun_unless_it_says_so() -> None:
    meta = record_to_meta(record(1))
    assert "merge_rerun" not in meta
    assert record_from_meta(meta).merge_rerun is False


def test_a_merge_rerun_is_written_last_in_meta_json_and_read_back() -> None:
    meta = record_to_meta(RERUN)
    assert list(meta)[-1] == "merge_rerun"
    assert meta["merge_rerun"] is True
    assert record_from_meta(meta) == RERUN


def test_meta_json_saying_false_reads_as_no_rerun() -> None:
    meta = {**record_to_meta(record(1)), "merge_rerun": False}
    assert record_from_meta(meta).merge_rerun is False


def test_a_merge_rerun_that_is_no_boolean_is_named() -> None:
    meta = {**record_to_meta(record(1)), "merge_rerun": "yes"}
    with pytest.raises(DamagedRecord) as raised:
        record_from_meta(meta)
    assert raised.value.field == "merge_rerun"


def test_the_trailers_carry_a_merge_rerun_last_and_give_it_back() -> None:
    trailers = record_trailers(RERUN)
    assert trailers[-1] == (MERGE_RERUN, "true")
    assert record_from_trailers(parse_trailers("subject\n\n" + render_trailers(trailers))) == RERUN


def test_a_record_without_a_rerun_has_no_rerun_trailer_and_the_same_canonical_bytes() -> None:
    plain = record(1)
    assert MERGE_RERUN not in dict(record_trailers(plain))
    body = render_trailers(record_trailers(plain)).encode()
    assert canonical_record(plain) == str(len(body)).encode() + b"\n" + body
    assert b"Merge-Rerun" not in canonical_record(plain)


def test_a_rerun_trailer_other_than_true_is_damaged() -> None:
    trailers = dict(record_trailers(RERUN))
    trailers[MERGE_RERUN] = "yes"
    with pytest.raises(DamagedTrailer) as raised:
        record_from_trailers(trailers)
    assert raised.value.name == MERGE_RERUN
