"""The parallel loop's scheduling by example: slots, numbers, pauses and what a job is told."""

from __future__ import annotations

from runner_core.parallel.scheduling import JobSlot, Starts, may_start, plan_starts, told_state
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, GuardOutcome


def test_new_jobs_take_the_free_slots_in_order_and_the_next_numbers() -> None:
    jobs = (JobSlot(7, 2), JobSlot(8, 0, finished=True), JobSlot(9, 3))
    assert plan_starts(4, jobs, 7, 6, max_iterations=100) == Starts(10, (0, 1))


def test_numbers_follow_the_last_merged_iteration_when_nothing_runs() -> None:
    assert plan_starts(2, (), 3, 5, max_iterations=100) == Starts(6, (0, 1))
    assert plan_starts(2, (), 9, 5, max_iterations=100) == Starts(9, (0, 1))


def test_the_iteration_limit_and_max_steps_count_the_jobs_not_yet_merged() -> None:
    jobs = (JobSlot(4, 0),)
    assert plan_starts(4, jobs, 4, 3, max_iterations=6) == Starts(5, (1, 2))
    assert plan_starts(4, jobs, 4, 3, max_iterations=4) == Starts(5, ())
    assert plan_starts(4, jobs, 4, 3, max_iterations=99, max_steps=3, steps=1) == Starts(5, (1,))
    assert plan_starts(4, jobs, 4, 3, max_iterations=99, max_steps=1, steps=1) == Starts(5, ())


def test_a_usage_limit_or_a_wait_pauses_the_starting() -> None:
    running = (JobSlot(1, 0),)
    assert may_start(2, running, 10.0, 0.0)
    assert not may_start(1, running, 10.0, 0.0)
    assert not may_start(2, running, 10.0, 11.0)
    limited = (JobSlot(1, 0, finished=True, limited=True),)
    assert not may_start(2, limited, 10.0, 0.0)
    # A running job's limit is heard when it finishes, not before.
    assert may_start(2, (JobSlot(1, 0, limited=True),), 10.0, 0.0)


def test_a_job_hears_its_own_nodes_last_iteration() -> None:
    state = RunState("run-00000001", 9, AgentStatus.DONE, "other leaf", GuardOutcome.PASS)
    own = RunState("run-00000001", 5, AgentStatus.RETRY, "needs a key", GuardOutcome.FAIL)
    kept, iteration = told_state({"a": (4, own)}, state, "a")
    assert iteration == 4
    assert (kept.next_iter, kept.last_status, kept.last_summary, kept.last_guard) == (
        9,
        AgentStatus.RETRY,
        "needs a key",
        GuardOutcome.FAIL,
    )
    fresh, none = told_state({"a": (4, own)}, state, "b")
    assert none is None
    assert (fresh.last_status, fresh.last_summary, fresh.last_guard) == (None, "", None)
