"""When the parallel loop starts jobs, in which slots, numbered how, and what each is told.

The loop asks these between two looks at its jobs (docs/parallel.md): a job holds its slot
while its agent or guard runs and frees it when it finishes, before its turn to merge; a
finished job that hit a usage limit, or a wait the policy began, pauses the starting (the
running jobs go on); new jobs take the free slots in order and the next numbers, never one
already given or merged; the iteration limit and `--max-steps` count the jobs not yet merged.
What a job is told of the last iteration (history.md, failure.md) is its own node's last, not
the run's, which with jobs side by side is often another leaf's. Never starts a job, reads a
clock or a file: the loop passes in what it knows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from runner_core.run.state import RunState


@attrs.frozen(slots=True)
class JobSlot:
    """A job not yet merged, as scheduling sees it: its number, its slot, whether its agent
    and guard have ended (it holds no slot then) and whether it ended at a usage limit."""

    iteration: int
    slot: int
    finished: bool = False
    limited: bool = False


@attrs.frozen(slots=True)
class Starts:
    """The jobs to start now: the first one's number (the rest follow it) and the slot of each,
    one per leaf the frontier offers, at most as many as `slots` holds."""

    first: int
    slots: tuple[int, ...] = ()


def busy_slots(jobs: Iterable[JobSlot]) -> frozenset[int]:
    """The slots a running job holds: a finished one waiting for its turn to merge holds none."""
    return frozenset(job.slot for job in jobs if not job.finished)


def may_start(slots: int, jobs: Iterable[JobSlot], now: float, resume_at: float) -> bool:
    """A free slot, no wait running (`now` before `resume_at`, on the loop's monotonic clock),
    and no finished job that hit a usage limit: its merge tells the policy, whose wait pauses
    the starting."""
    jobs = tuple(jobs)
    if any(job.finished and job.limited for job in jobs):
        return False
    return len(busy_slots(jobs)) < slots and now >= resume_at


def plan_starts(
    slots: int,
    jobs: Iterable[JobSlot],
    next_iter: int,
    merged_upto: int,
    *,
    max_iterations: int,
    max_steps: int | None = None,
    steps: int = 0,
) -> Starts:
    """Where and as which iterations new jobs may start: the free slots in order, numbered from
    the first number after every job given and merged and not below the run state's
    `next_iter`; no more of them than the iteration limit leaves from there, nor (with
    `--max-steps`) than the loop's steps left once its jobs not yet merged count."""
    jobs = tuple(jobs)
    busy = busy_slots(jobs)
    first = max([next_iter, merged_upto + 1, *(job.iteration + 1 for job in jobs)])
    left = max_iterations - first + 1
    if max_steps is not None:
        left = min(left, max_steps - steps - len(jobs))
    free = tuple(number for number in range(slots) if number not in busy)
    return Starts(first, free[: max(left, 0)])


def told_state(
    told: Mapping[str, tuple[int, RunState]], state: RunState, node_id: str
) -> tuple[RunState, int | None]:
    """The run state a job on `node_id` is told, and the iteration it tells of: `state` with
    the last status, summary and guard of the node's own last iteration in `told` (none when
    it has none), and that iteration's number."""
    found = told.get(node_id)
    last = RunState() if found is None else found[1]
    kept = attrs.evolve(
        state,
        last_status=last.last_status,
        last_summary=last.last_summary,
        last_guard=last.last_guard,
    )
    return kept, None if found is None else found[0]
