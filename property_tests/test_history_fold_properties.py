"""A history extended record by record gives what the same records give read at once: what the
views derive from it and keep with it (the summary, each node's stats, the rollups, the tests
and spend series) is folded forward from the records added alone, and must equal computing
it afresh, whatever the records, their costs, their order of ending and the chunks they come
in; a rollup over a tree too."""

from __future__ import annotations

import itertools

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.test_history_properties import record_lists
from property_tests.test_web_view_properties import trees_and_histories
from runner_core.guard.ratchet import TestFigures
from runner_core.history.records import ExecutionHistory, ExecutionRecord, node_stats
from runner_core.history.sources import missing_iterations
from runner_core.loop.budget import rolled_up_totals
from runner_core.tree.model import Node
from runner_core.views import charts

SETTINGS = settings(max_examples=200, deadline=None)


def derived(history: ExecutionHistory, tree: Node | None = None) -> tuple[object, ...]:
    """Everything a history keeps, computed (and so kept) on `history`."""
    rollups = None if tree is None else rolled_up_totals(tree, history)
    return (
        history.summary(),
        node_stats(history),
        charts.spend_series(history),
        charts.tests_series(history),
        rollups,
        [missing_iterations(history, run_id, 12) for run_id in ("run-a", "run-b")],
    )


def with_tests(records: list[ExecutionRecord], figures: list[int]) -> list[ExecutionRecord]:
    """Some of the records with a guard report, as a ratchet guard writes one."""
    return [
        attrs.evolve(r, tests=TestFigures(passed, 1, 0, passed + 1, 0, 0, 0)) if passed % 3 else r
        for r, passed in zip(records, figures + [0] * len(records), strict=False)
    ]


def folded_equals_fresh(
    records: list[ExecutionRecord], cuts: list[int], tree: Node | None = None
) -> None:
    ordered = ExecutionHistory.of(records).records
    bounds = sorted({0, len(ordered), *(cut % (len(ordered) + 1) for cut in cuts)})
    history = ExecutionHistory(ordered[: bounds[0]])
    derived(history, tree)
    for start, end in itertools.pairwise(bounds):
        history = history.extended(ordered[start:end])
        assert history == ExecutionHistory(ordered[:end])
        assert derived(history, tree) == derived(ExecutionHistory(ordered[:end]), tree)


@SETTINGS
@given(record_lists, st.lists(st.integers(0, 40), max_size=6), st.lists(st.integers(0, 9)))
def test_a_history_extended_chunk_by_chunk_derives_what_a_fresh_one_does(
    records: list[ExecutionRecord], cuts: list[int], figures: list[int]
) -> None:
    """Records of one run or two, ending in any order (a spend series then reads them afresh),
    some with test figures: each chunk's history derives what the same records read at once
    derive."""
    folded_equals_fresh(with_tests(records, figures), cuts)


@SETTINGS
@given(trees_and_histories(), st.lists(st.integers(0, 20), max_size=6))
def test_a_history_extended_chunk_by_chunk_rolls_up_a_tree_as_a_fresh_one_does(
    tree_and_history: tuple[Node, ExecutionHistory], cuts: list[int]
) -> None:
    """Each node's subtree totals (executions, attempts, time, tokens, exact cost) over a
    history extended chunk by chunk are the ones over the same records read at once."""
    tree, history = tree_and_history
    folded_equals_fresh(list(history.records), cuts, tree)


@SETTINGS
@given(record_lists, st.sets(st.integers(1, 30)), st.integers(1, 40))
def test_the_iterations_a_history_lacks_are_those_no_record_holds(
    records: list[ExecutionRecord], dropped: set[int], next_iter: int
) -> None:
    """Whatever holes the records leave, `missing_iterations` names exactly the iterations
    before `next_iter` that no record of the run holds, in order."""
    kept = [r for r in records if r.iteration not in dropped or r.run_id == "run-b"]
    history = ExecutionHistory.of(kept)
    for run_id in ("run-a", "run-b", "run-c"):
        held = {r.iteration for r in kept if r.run_id == run_id}
        expected = tuple(n for n in range(1, next_iter) if n not in held)
        assert missing_iterations(history, run_id, next_iter) == expected
