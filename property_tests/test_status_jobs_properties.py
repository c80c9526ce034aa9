"""Properties of `runner status` for a parallel run (runner_core.views.status): the jobs it
lists are this run's uncommitted iterations, each once and in order, and a node is shown
running exactly when it or a node below it is a live job's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory, NodeDisplayState, display_states
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.run.state import RunState
from runner_core.testing import trees
from runner_core.tree.model import Node, canonical_preorder, iter_preorder
from runner_core.views.status import OperatorFacts, RunningJob, running_jobs, status_view

RUN = "run-1a2b3c4d"
SETTINGS = settings(max_examples=200, deadline=None)


def _journal(run_id: str, iteration: int, node_id: str, phase: JournalPhase) -> Journal:
    return Journal(run_id, iteration, node_id, "executor", phase, "2026-01-01T00:00:00Z", 7, "x")


jobs_st = st.builds(
    RunningJob,
    st.builds(
        _journal,
        st.sampled_from([RUN, "run-other"]),
        st.integers(1, 12),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(list(JournalPhase)),
    ),
    st.booleans(),
)


@given(st.lists(jobs_st, max_size=8), st.none() | jobs_st, st.integers(1, 12))
@SETTINGS
def test_jobs_are_this_runs_uncommitted_iterations_once_each_in_order(
    journals: list[RunningJob], run_journal: RunningJob | None, next_iteration: int
) -> None:
    found = running_jobs(RUN, next_iteration, run_journal, journals)
    numbers = [job.journal.iteration for job in found]
    assert numbers == sorted(set(numbers))
    expected = {
        job.journal.iteration
        for job in journals
        if job.journal.run_id == RUN and job.journal.iteration >= next_iteration
    }
    if run_journal is not None and run_journal.journal.run_id == RUN:
        expected.add(run_journal.journal.iteration)
        assert run_journal in found  # the run's journal wins over its job's
    assert set(numbers) == expected
    assert all(job in journals or job == run_journal for job in found)


@given(trees(max_nodes=12), st.data())
@SETTINGS
def test_a_node_runs_exactly_when_a_live_job_is_it_or_below_it(
    tree: Node, data: st.DataObject
) -> None:
    leaves = [node.id for node, _ in iter_preorder(tree) if node.is_leaf]
    running = data.draw(st.lists(st.sampled_from(leaves), unique=True, max_size=4))
    jobs = tuple(
        RunningJob(_journal(RUN, 10 + index, node_id, JournalPhase.RUNNING), True)
        for index, node_id in enumerate(running)
    )
    state = RunState(run_id=RUN, next_iter=10)
    view = status_view(tree, state, 100, ExecutionHistory(), operator=OperatorFacts(jobs=jobs))
    idle = display_states(tree, ExecutionHistory())
    for row, (node, path, _) in zip(view.tree, canonical_preorder(tree), strict=True):
        below = {found.id for found, _ in iter_preorder(node)}
        runs = bool(below & set(running))
        assert (row.state is NodeDisplayState.RUNNING) == runs, (path, running)
        if not runs:
            assert row.state == idle[node.id]
