"""Iteration order is law in the merge queue: a job that ended without a
commit (its thread failed) stays first in line, and no later job merges past it, however many
have finished behind it; the loop ends once every job's thread has."""

from __future__ import annotations

from typing import Any, cast

from runner_shell.loop.parallel_jobs import Job
from runner_shell.loop.parallel_merges import ParallelLoop, left_behind, merge_next


def _job(number: int, **ended: Any) -> Job:
    none = cast(Any, None)
    return Job(number, f"root.{number}", number, none, none, None, none, 0, **ended)


def test_no_job_merges_past_one_that_failed() -> None:
    failed = RuntimeError("the transport broke")
    loop = ParallelLoop(cast(Any, None), 3, None)
    loop.jobs = {1: _job(1, error=failed), 2: _job(2, machine=cast(Any, object())), 3: _job(3)}
    loop.finished = {1, 2}

    assert merge_next(loop) is True  # job 1 is booked as the failure it is
    assert (loop.halted_at, loop.failure, loop.ending) == (1, failed, 1)
    assert merge_next(loop) is False  # job 2 finished, but waits behind job 1
    assert loop.merged_upto == 0 and sorted(loop.jobs) == [1, 2, 3]
    assert loop.merging is None
    assert not left_behind(loop)  # job 3 still runs: the loop waits for its thread

    loop.finished.add(3)
    assert left_behind(loop)
    assert merge_next(loop) is False
