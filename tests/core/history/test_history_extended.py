"""`ExecutionHistory.extended`: a history folded forward is the history built from all its
records, and refuses what the constructor refuses."""

from __future__ import annotations

import pytest

from runner_core.history.records import DuplicateIteration, ExecutionHistory, ExecutionRecord
from tests.helpers.records import record


def test_an_extended_history_is_the_history_of_all_its_records() -> None:
    first = [record(1, "root.1"), record(2, "root.2"), record(3, "root.1")]
    later = [record(4, "root.1"), record(5, "root.3")]
    extended = ExecutionHistory(tuple(first)).extended(later)
    whole = ExecutionHistory(tuple(first + later))
    assert extended == whole
    for node_id in ("root.1", "root.2", "root.3", "root.4"):
        assert extended.records_for(node_id) == whole.records_for(node_id)
    assert extended.node_ids() == whole.node_ids()
    assert extended.summary() == whole.summary()


def test_extending_an_empty_history_or_by_nothing() -> None:
    history = ExecutionHistory((record(1),))
    assert history.extended([]) is history
    assert ExecutionHistory().extended([record(1)]) == history
    assert ExecutionHistory().extended([record(1)]).records_for("root.1") == (record(1),)


def test_extending_leaves_the_history_it_grew_from_as_it_was() -> None:
    history = ExecutionHistory((record(1, "root.1"),))
    history.extended([record(2, "root.1")])
    assert history.records_for("root.1") == (record(1, "root.1"),)


def test_a_record_before_the_last_or_the_same_iteration_again_is_refused() -> None:
    history = ExecutionHistory((record(1), record(3)))
    with pytest.raises(ValueError, match="must be sorted"):
        history.extended([record(2)])
    with pytest.raises(DuplicateIteration):
        history.extended([record(3)])


def test_what_is_folded_is_computed_once_then_carried_by_the_records_added_alone() -> None:
    starts: list[int] = []
    mores: list[tuple[int, ...]] = []

    def start(records: tuple[ExecutionRecord, ...]) -> int:
        starts.append(len(records))
        return len(records)

    def more(count: int, added: tuple[ExecutionRecord, ...]) -> int:
        mores.append(tuple(r.iteration for r in added))
        return count + len(added)

    history = ExecutionHistory((record(1), record(2)))
    assert history.folded(start, more) == 2
    assert history.folded(start, more) == 2
    grown = history.extended([record(3), record(4)]).extended([record(5)])
    assert grown.folded(start, more) == 5
    assert starts == [2] and mores == [(3, 4), (5,)]


def test_a_fold_that_cannot_tell_is_computed_afresh_on_the_history_extended() -> None:
    history = ExecutionHistory((record(1),))
    history.folded(len, lambda count, added: None)
    assert history.extended([record(2)]).folded(len, lambda count, added: None) == 2


def test_what_a_node_folds_is_kept_for_the_nodes_that_gained_no_record() -> None:
    computed: list[str] = []

    def count(node_id: str, records: tuple[ExecutionRecord, ...]) -> int:
        computed.append(node_id)
        return len(records)

    history = ExecutionHistory((record(1, "root.1"), record(2, "root.2")))
    assert [history.node_folded(count, n) for n in ("root.1", "root.2")] == [1, 1]
    grown = history.extended([record(3, "root.2")])
    assert [grown.node_folded(count, n) for n in ("root.1", "root.2")] == [1, 2]
    assert computed == ["root.1", "root.2", "root.2"]
