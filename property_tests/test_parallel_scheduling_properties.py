"""Properties of the parallel loop's scheduling: which slots new jobs take, their numbers, and
what a job is told of its node's last iteration."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from runner_core.parallel.scheduling import (
    JobSlot,
    busy_slots,
    may_start,
    plan_starts,
    told_state,
)
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, GuardOutcome


@st.composite
def loops(draw: st.DrawFn) -> tuple[int, tuple[JobSlot, ...], int]:
    """A slot count, the jobs not yet merged (each running one in a slot of its own, numbered
    above the last merged iteration), and that last merged iteration."""
    slots = draw(st.integers(1, 8))
    merged_upto = draw(st.integers(0, 50))
    numbers = draw(st.lists(st.integers(merged_upto + 1, merged_upto + 20), unique=True))
    used = draw(st.permutations(range(slots)))
    jobs = []
    for index, number in enumerate(sorted(numbers)):
        finished = index >= len(used) or draw(st.booleans())
        slot = used[index] if index < len(used) else draw(st.integers(0, slots - 1))
        jobs.append(JobSlot(number, slot, finished, finished and draw(st.booleans())))
    return slots, tuple(jobs), merged_upto


@given(loops(), st.integers(1, 80), st.integers(1, 200), st.none() | st.integers(0, 30))
def test_new_jobs_take_free_slots_and_numbers_never_given(
    loop: tuple[int, tuple[JobSlot, ...], int],
    next_iter: int,
    max_iterations: int,
    max_steps: int | None,
) -> None:
    """New jobs start only in slots no running job holds, each in its own, numbered after every
    job given or merged and from the run state's next iteration on; never past the iteration
    limit, nor more than `--max-steps` leaves once the jobs not yet merged count."""
    slots, jobs, merged_upto = loop
    steps = 3
    starts = plan_starts(
        slots,
        jobs,
        next_iter,
        merged_upto,
        max_iterations=max_iterations,
        max_steps=max_steps,
        steps=steps,
    )
    assert len(set(starts.slots)) == len(starts.slots)
    assert all(0 <= slot < slots for slot in starts.slots)
    assert not set(starts.slots) & busy_slots(jobs)
    assert list(starts.slots) == sorted(starts.slots)
    assert starts.first >= next_iter
    assert starts.first > merged_upto
    assert all(starts.first > job.iteration for job in jobs)
    last = starts.first + len(starts.slots) - 1
    assert not starts.slots or last <= max_iterations
    if max_steps is not None:
        assert steps + len(jobs) + len(starts.slots) <= max(max_steps, steps + len(jobs))
    # Nothing else holds a slot back: every free one is offered while the limits leave room.
    room = max_iterations - starts.first + 1
    if max_steps is not None:
        room = min(room, max_steps - steps - len(jobs))
    assert len(starts.slots) == max(0, min(room, slots - len(busy_slots(jobs))))


@given(loops(), st.floats(0, 100), st.floats(0, 100))
def test_starting_waits_for_a_slot_a_wait_and_a_usage_limit(
    loop: tuple[int, tuple[JobSlot, ...], int], now: float, resume_at: float
) -> None:
    """A job may start exactly when a slot is free, no wait runs and no finished job hit a
    usage limit; and then there is a free slot to start it in."""
    slots, jobs, _ = loop
    limited = any(job.finished and job.limited for job in jobs)
    free = len(busy_slots(jobs)) < slots
    assert may_start(slots, jobs, now, resume_at) == (free and now >= resume_at and not limited)
    if may_start(slots, jobs, now, resume_at):
        assert plan_starts(slots, jobs, 1, 0, max_iterations=10**6).slots


statuses = st.none() | st.sampled_from(AgentStatus)
guards = st.none() | st.sampled_from(GuardOutcome)
run_states = st.builds(
    RunState,
    run_id=st.just("run-00000000"),
    next_iter=st.integers(1, 100),
    last_status=statuses,
    last_summary=st.text(max_size=5),
    last_guard=guards,
)


@given(
    run_states,
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]), st.tuples(st.integers(1, 99), run_states), max_size=3
    ),
    st.sampled_from(["a", "b", "c"]),
)
def test_a_job_is_told_its_own_nodes_last_iteration(
    state: RunState, told: dict[str, tuple[int, RunState]], node_id: str
) -> None:
    """What a job is told of the last iteration is its node's own, or nothing when its node has
    not run in this loop; everything else is the run's state as it is."""
    kept, iteration = told_state(told, state, node_id)
    last = told[node_id][1] if node_id in told else RunState()
    assert iteration == (told[node_id][0] if node_id in told else None)
    assert (kept.last_status, kept.last_summary, kept.last_guard) == (
        last.last_status,
        last.last_summary,
        last.last_guard,
    )

    def neutral(found: RunState) -> RunState:
        return attrs.evolve(found, last_status=None, last_summary="", last_guard=None)

    assert neutral(kept) == neutral(state)
