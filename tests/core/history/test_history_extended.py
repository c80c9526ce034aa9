"""`ExecutionHistory.extended`: a history folded forward is the history built from all its
records, and refuses what the constructor refuses."""

from __future__ import annotations

import pytest

from runner_core.history.records import DuplicateIteration, ExecutionHistory
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
