"""What is running in a run: the node of the iteration in progress and every job in flight.

Decides which journals are this run's iterations in flight (one per iteration, the run's
journal over a job's) and how the tree's nodes read while several run at once. Never reads a
journal file or asks whether a runner is alive: the shell does, and hands the journals over.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from runner_core.history.records import ExecutionHistory, NodeDisplayState, display_states
from runner_core.iteration.recovery import Journal, job_committed
from runner_core.tree.model import Node, iter_preorder


def running_node_id(journal: Journal | None, run_id: str | None) -> str | None:
    """The node of the iteration in progress, when the journal belongs to this run."""
    if journal is None or run_id is None or journal.run_id != run_id:
        return None
    return journal.node_id


@attrs.frozen(slots=True)
class RunningJob:
    """An iteration in flight in a parallel run, and whether the runner that wrote its journal
    is alive (a dead one's job is interrupted, as a one-slot iteration's is); `worker`: the
    identity of the worker running a remote job, once its loop has heard it."""

    journal: Journal
    alive: bool
    worker: str | None = None


def running_jobs(
    run_id: str | None,
    next_iteration: int,
    run_journal: RunningJob | None,
    job_journals: Iterable[RunningJob],
) -> tuple[RunningJob, ...]:
    """Every iteration of this run in flight, in iteration order, each once.

    A parallel job keeps its own journal while it runs; while it is merged the run's journal
    names it too, and that one wins (its phase is the later). A job journal of an iteration
    already committed (`< next_iteration`) is one its loop had not yet removed: not in flight.
    """
    found: dict[int, RunningJob] = {}
    for job in job_journals:
        journal = job.journal
        ours = running_node_id(journal, run_id) is not None
        if ours and not job_committed(journal.iteration, next_iteration):
            found.setdefault(journal.iteration, job)
    if run_journal is not None and running_node_id(run_journal.journal, run_id) is not None:
        number = run_journal.journal.iteration
        worker = found[number].worker if number in found else None
        found[number] = attrs.evolve(run_journal, worker=worker)
    return tuple(found[number] for number in sorted(found))


def running_display_states(
    tree: Node, history: ExecutionHistory, running_ids: tuple[str, ...]
) -> dict[str, NodeDisplayState]:
    """`display_states` with every node in `running_ids` running: a node runs when any job's
    reading says so (it, or a node below it, is that job's), and the others read as they would
    with nothing running; nodes outside the tree follow the tree's, sorted by id."""
    if len(running_ids) < 2:
        return display_states(tree, history, running_ids[0] if running_ids else None)
    states = display_states(tree, history, None)
    for node_id in running_ids:
        for key, shown in display_states(tree, history, node_id).items():
            if shown is NodeDisplayState.RUNNING:
                states[key] = shown
    in_tree = [node.id for node, _ in iter_preorder(tree)]
    kept = dict.fromkeys(in_tree)
    return {key: states[key] for key in [*kept, *sorted(set(states) - set(kept))]}
