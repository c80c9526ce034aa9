"""Which record of each iteration a run's history holds when several places record it.

An iteration is recorded in its directory's meta.json, in the log archive ref and in the
trailers of its commit; a clone may hold some directories and only the commits for the rest.
Decides, per iteration, that the first source given that records it wins, so every iteration
is counted once and none is lost; and which iterations a history lacks. Never reads them.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner_core.history.records import ExecutionHistory, ExecutionRecord


def merged_history(*sources: Iterable[ExecutionRecord]) -> ExecutionHistory:
    """Every iteration of every source once: its record from the first source holding it."""
    chosen: dict[tuple[str, int], ExecutionRecord] = {}
    for source in sources:
        for record in source:
            chosen.setdefault((record.run_id, record.iteration), record)
    return ExecutionHistory.of(chosen.values())


def missing_iterations(history: ExecutionHistory, run_id: str, next_iter: int) -> tuple[int, ...]:
    """The iterations the run committed before `next_iter` that `history` holds no record of."""
    held = {record.iteration for record in history.records if record.run_id == run_id}
    return tuple(number for number in range(1, next_iter) if number not in held)


def iteration_ranges(numbers: Iterable[int]) -> str:
    """`1-3, 5`: sorted iteration numbers, each run of consecutive ones as a range."""
    spans: list[list[int]] = []
    for number in sorted(set(numbers)):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
