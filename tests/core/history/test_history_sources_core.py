"""A history read from several places holds every iteration once, from the first that has it."""

from __future__ import annotations

from runner_core.history.sources import iteration_ranges, merged_history, missing_iterations
from tests.helpers.records import record

LOCAL = (record(3, cost_usd=0.5),)
ARCHIVED = (record(2, cost_usd=0.25), record(3, cost_usd=99.0))
TRAILERS = (record(1, cost_usd=0.25), record(2, cost_usd=99.0), record(3, cost_usd=99.0))


def test_each_iteration_comes_from_the_first_source_that_records_it() -> None:
    history = merged_history(LOCAL, ARCHIVED, TRAILERS)

    assert [(r.iteration, r.cost_usd) for r in history.records] == [(1, 0.25), (2, 0.25), (3, 0.5)]
    assert history.summary().total_cost_usd == 1.0


def test_the_iterations_a_history_lacks_are_those_before_the_next_one_it_does_not_hold() -> None:
    assert missing_iterations(merged_history(LOCAL), "run-1", 5) == (1, 2, 4)
    assert missing_iterations(merged_history(TRAILERS), "run-1", 4) == ()
    assert missing_iterations(merged_history(LOCAL), "run-other", 2) == (1,)


def test_iterations_are_named_as_ranges() -> None:
    assert iteration_ranges((5, 1, 2, 3, 9, 8)) == "1-3, 5, 8-9"
    assert iteration_ranges(()) == ""
