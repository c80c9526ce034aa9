"""Specification of the merge queue: iteration order, not finish order; the guard again when
the head moved."""

from __future__ import annotations

import pytest

from runner_core.parallel.queue import needs_guard_again, next_to_merge


@pytest.mark.parametrize(
    ("finished", "merged_upto", "scheduled", "expected"),
    [
        ({1}, 0, (1, 2, 3), 1),
        ({2, 3}, 0, (1, 2, 3), None),  # job 1 still runs: 2 and 3 wait for it
        ({2, 3}, 1, (1, 2, 3), 2),
        ({3}, 2, (1, 2, 3), 3),
        ({3}, 3, (1, 2, 3), None),  # nothing left to merge
        (set(), 0, (), None),
        ({7}, 5, (5, 7, 8), 7),  # job 5 merged or dropped; numbers need not be contiguous
        ({8}, 5, (5, 7, 8), None),
    ],
)
def test_the_first_waiting_job_merges_once_it_has_finished(
    finished: set[int], merged_upto: int, scheduled: tuple[int, ...], expected: int | None
) -> None:
    assert next_to_merge(frozenset(finished), merged_upto, scheduled) == expected


def test_a_job_whose_base_is_still_the_head_keeps_its_guard_result() -> None:
    assert needs_guard_again("abc123", "abc123") is False


def test_a_job_merged_after_other_jobs_runs_its_guard_again() -> None:
    assert needs_guard_again("abc123", "def456") is True
