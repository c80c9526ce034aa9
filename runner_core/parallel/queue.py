"""The merge queue: finished jobs join the run branch in iteration order, not finish order.

Each job is one iteration, numbered in canonical order when it is scheduled. Job k merges (or
is dropped, after a conflict) only once every job before it has, so the run's history reads as
if the jobs had run one after another. A job whose start commit is no longer the head meets
work it did not see, so its guard runs again on the merged result before its pass counts.
Never merges, runs a guard or reads git: the loop carries these decisions out.
"""

from __future__ import annotations


def next_to_merge(
    finished: frozenset[int], merged_upto: int, scheduled: tuple[int, ...]
) -> int | None:
    """The job to merge now: the first `scheduled` job after `merged_upto` (every job up to it
    merged or dropped), when it has `finished`; None while it runs or when none is left."""
    waiting = [job for job in scheduled if job > merged_upto]
    if not waiting:
        return None
    first = min(waiting)
    return first if first in finished else None


def needs_guard_again(job_base: str, head: str) -> bool:
    """Whether job k's guard must run again on the merged result: other jobs merged between
    its start (`job_base`, the commit it started at) and its merge (`head`, the run branch's
    commit it merges onto). A job whose base is still the head keeps its own guard result."""
    return job_base != head
