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


# Each run's iterations in a history: how many, the lowest and the highest.
Spans = dict[str, tuple[int, int, int]]


def _spans_more(spans: Spans, records: tuple[ExecutionRecord, ...]) -> Spans:
    grown = dict(spans)
    for record in records:
        count, low, high = grown.get(record.run_id, (0, record.iteration, record.iteration))
        grown[record.run_id] = (count + 1, min(low, record.iteration), max(high, record.iteration))
    return grown


def _spans_of(records: tuple[ExecutionRecord, ...]) -> Spans:
    return _spans_more({}, records)


def missing_iterations(history: ExecutionHistory, run_id: str, next_iter: int) -> tuple[int, ...]:
    """The iterations the run committed before `next_iter` that `history` holds no record of."""
    count, low, high = history.folded(_spans_of, _spans_more).get(run_id, (0, 1, 0))
    if count == high - low + 1 and low == 1:  # each iteration is held once: 1 to `high`, all
        return tuple(range(high + 1, next_iter))
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
