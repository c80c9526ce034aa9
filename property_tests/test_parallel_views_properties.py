"""Properties of the views of a parallel run: `runner status` lists this run's uncommitted
iterations, each once and in order, and shows a node running exactly when it or a node below
it is a live job's (runner_core.views.status); `runner follow` tags each interleaved job's
lines with its iteration and leaves one-slot lines as they were (runner_core.views.follow)."""

from __future__ import annotations

from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory, NodeDisplayState, display_states
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin
from runner_core.run.state import RunState
from runner_core.testing import trees
from runner_core.tree.model import Node, canonical_preorder, iter_preorder
from runner_core.views.follow import event_text, followed_text
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


def _iteration_events(number: int, node_id: str, outputs: list[str]) -> list[Event]:
    here = EventOrigin(RUN, number, node_id, "2026-01-01T00:00:00Z")
    return [
        events.iteration_started(here, "executor", 0, 3),
        events.agent_started(here, "executor", "command"),
        *(events.agent_output(here, "agent", (line,), 0) for line in outputs),
        events.agent_finished(here, 0, 10),
        events.iteration_finished(here, {"status": "done", "guard": "pass"}),
    ]


def _followed(log: list[Event]) -> list[str]:
    in_flight: frozenset[int] = frozenset()
    shown: list[str] = []
    for event in log:
        in_flight, lines = followed_text(in_flight, event)
        shown.extend(lines)
    return shown


iterations_st = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.lists(st.text(max_size=8), max_size=3)),
    max_size=5,
)


@given(iterations_st)
@SETTINGS
def test_one_iteration_at_a_time_follows_as_the_one_slot_lines(
    iterations: list[tuple[str, list[str]]],
) -> None:
    log = [
        event
        for number, (node_id, outputs) in enumerate(iterations, start=1)
        for event in _iteration_events(number, node_id, outputs)
    ]
    assert _followed(log) == [line for event in log for line in event_text(event)]


@given(iterations_st, st.randoms(use_true_random=False))
@SETTINGS
def test_interleaved_jobs_lines_each_name_their_iteration(
    iterations: list[tuple[str, list[str]]], rng: Random
) -> None:
    """Every job started before any finishes; their agent events interleave in any order, each
    job's own in order: each agent line then names its job."""
    jobs = [
        _iteration_events(number, node_id, outputs)
        for number, (node_id, outputs) in enumerate(iterations, start=1)
    ]
    starts = [job[0] for job in jobs]
    middles = [job[1:-1] for job in jobs]
    mixed: list[Event] = []
    while any(middles):
        pick = rng.choice([index for index, rest in enumerate(middles) if rest])
        mixed.append(middles[pick][0])
        middles[pick] = middles[pick][1:]
    log = [*starts, *mixed, *(job[-1] for job in jobs)]
    in_flight: frozenset[int] = frozenset()
    for event in log:
        in_flight, lines = followed_text(in_flight, event)
        if event in mixed and len(jobs) > 1:
            tag = f"  [iter={event.iter} node={event.node_id}] "
            assert all(line.startswith(tag) for line in lines), lines
    assert in_flight == frozenset()
