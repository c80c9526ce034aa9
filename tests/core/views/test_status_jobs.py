"""`runner status` for a parallel run: every job in flight, by iteration (runner_core.views.status).

Pure builders only: the tree, the history and the journals go in, the view, its `--json`
document and its lines come out; every document is checked against the shipped schema.
"""

from __future__ import annotations

import attrs

from runner_core.history.records import ExecutionHistory
from runner_core.iteration.recovery import JournalPhase
from runner_core.views.status import (
    OperatorFacts,
    RunningJob,
    render_status,
    running_jobs,
    status_to_json,
    status_view,
)
from tests.core.views.test_reports_core import HISTORY, RUN, STATE, TREE, assert_valid, journal
from tests.helpers.trees import tree

# Two subtrees whose leaves run side by side: a/a.1 and b/b.1, with a/a.2 and b/b.2 waiting.
PARALLEL = tree(
    "root",
    tree("a", tree("a.1", order=0), tree("a.2", order=1), order=0, next="decompose"),
    tree("b", tree("b.1", order=0), tree("b.2", order=1), order=1, next="decompose"),
    next="decompose",
)
NEXT = attrs.evolve(STATE, next_iter=6)


def jobs(*pairs: tuple[str, int], alive: bool = True) -> tuple[RunningJob, ...]:
    return tuple(RunningJob(journal(node_id, iteration=number), alive) for node_id, number in pairs)


def test_every_running_job_is_listed_by_iteration_and_its_node_is_running() -> None:
    facts = OperatorFacts(jobs=jobs(("b.1", 7), ("a.1", 6)))
    view = status_view(PARALLEL, NEXT, 100, ExecutionHistory(), operator=facts)
    document = status_to_json(view)
    assert_valid(document, "status")
    states = {row["id"]: row["state"] for row in document["tree"]}
    assert [states[key] for key in ("root", "a", "a.1", "a.2", "b", "b.1", "b.2")] == [
        "running",
        "running",
        "running",
        "pending",
        "running",
        "running",
        "pending",
    ]
    assert [(job["iteration"], job["node_id"], job["alive"]) for job in document["jobs"]] == [
        (6, "a.1", True),
        (7, "b.1", True),
    ]
    # `running` keeps its one-iteration meaning: the oldest job in flight.
    assert document["running"] is not None and document["running"]["iteration"] == 6
    assert document["interrupted"] is None
    lines = render_status(view)
    running = [line for line in lines if line.startswith("status: running ")]
    assert running == [
        "status: running iter=6 node=a.1 phase=running started_at=2026-01-01T00:10:00.000Z",
        "status: running iter=7 node=b.1 phase=running started_at=2026-01-01T00:10:00.000Z",
    ]


def test_the_job_being_merged_is_shown_once_with_the_run_journals_phase() -> None:
    committing = attrs.evolve(journal("a.1", iteration=6), phase=JournalPhase.COMMITTING)
    facts = OperatorFacts(jobs=jobs(("a.1", 6), ("b.1", 7)))
    view = status_view(PARALLEL, NEXT, 100, ExecutionHistory(), committing, facts)
    document = status_to_json(view)
    assert [(job["iteration"], job["phase"]) for job in document["jobs"]] == [
        (6, "committing"),
        (7, "running"),
    ]


def test_jobs_of_a_dead_runner_are_interrupted_with_the_recover_hint() -> None:
    facts = OperatorFacts(jobs=jobs(("a.1", 6), ("b.1", 7), alive=False))
    view = status_view(PARALLEL, NEXT, 100, ExecutionHistory(), operator=facts)
    document = status_to_json(view)
    assert_valid(document, "status")
    assert document["running"] is None
    assert document["interrupted"] is not None and document["interrupted"]["iteration"] == 6
    assert [job["alive"] for job in document["jobs"]] == [False, False]
    assert "running" not in {row["state"] for row in document["tree"]}
    cut = [line for line in render_status(view) if line.startswith("status: interrupted ")]
    assert cut == [
        f"status: interrupted iter={number} node={node_id} phase=running "
        "started_at=2026-01-01T00:10:00.000Z (its runner is gone; run 'runner recover')"
        for node_id, number in (("a.1", 6), ("b.1", 7))
    ]


def test_without_job_journals_the_document_and_lines_are_the_one_slot_ones() -> None:
    one = status_view(TREE, STATE, 100, HISTORY, journal("root.2"))
    stale = OperatorFacts(jobs=jobs(("root.3", 5)))  # already committed: next_iter is 7
    other = OperatorFacts(
        jobs=(RunningJob(journal("root.3", run_id="run-other", iteration=8), True),)
    )
    for facts in (stale, other):
        view = status_view(TREE, STATE, 100, HISTORY, journal("root.2"), facts)
        assert view.jobs is None
        assert status_to_json(view) == status_to_json(one)
        assert render_status(view) == render_status(one)
    assert "jobs" not in status_to_json(one)


def test_running_jobs_skips_committed_and_other_runs_journals() -> None:
    found = running_jobs(
        RUN,
        6,
        RunningJob(journal("b.1", iteration=7), True),
        (
            *jobs(("a.2", 8), ("b.1", 7), ("a.1", 5)),
            RunningJob(journal("a.1", run_id="run-other", iteration=9), True),
        ),
    )
    assert [(job.journal.iteration, job.journal.node_id) for job in found] == [
        (7, "b.1"),
        (8, "a.2"),
    ]


def test_a_remote_jobs_worker_is_on_its_running_line_and_in_its_json_entry() -> None:
    remote, local = jobs(("a.1", 6), ("b.1", 7))
    facts = OperatorFacts(jobs=(attrs.evolve(remote, worker="box-1:4242"), local))
    view = status_view(PARALLEL, NEXT, 100, ExecutionHistory(), operator=facts)
    document = status_to_json(view)
    assert_valid(document, "status")
    assert [job["worker"] for job in document["jobs"]] == ["box-1:4242", None]
    running = [line for line in render_status(view) if line.startswith("status: running ")]
    assert running == [
        "status: running iter=6 node=a.1 phase=running started_at=2026-01-01T00:10:00.000Z "
        "worker=box-1:4242",
        "status: running iter=7 node=b.1 phase=running started_at=2026-01-01T00:10:00.000Z",
    ]


def test_a_remote_job_being_merged_keeps_its_worker() -> None:
    committing = attrs.evolve(journal("a.1", iteration=6), phase=JournalPhase.COMMITTING)
    remote = attrs.evolve(jobs(("a.1", 6))[0], worker="box-1:4242")
    view = status_view(
        PARALLEL, NEXT, 100, ExecutionHistory(), committing, OperatorFacts(jobs=(remote,))
    )
    document = status_to_json(view)
    assert [(job["phase"], job["worker"]) for job in document["jobs"]] == [
        ("committing", "box-1:4242")
    ]
