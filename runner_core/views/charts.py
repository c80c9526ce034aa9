"""The pictures of `runner serve`'s page and of `runner serve --snapshot`, as data.

Decides what each picture shows: the tests passing at each iteration, the tokens and cost spent
over time, the timeline of the slots (which node each slot ran, when, how it ended; a remote
job in its worker's lane) and the tree's progress (leaves passed, running, stuck, open); and the
elapsed / relative wording of a time beside its absolute form. Never reads a file or the clock:
the shell hands in the history, the status document and the clock reading, and draws the SVG.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from runner_core.history.execution import ExecutionRecord
from runner_core.history.records import ExecutionHistory


# Each picture reads every record's times, and `runner serve` draws its pictures again as a run
# grows: a record's time is parsed once (a datetime is immutable), not at every drawing.
@functools.lru_cache(maxsize=1 << 16)
def parse_time(value: str) -> datetime:
    """An ISO-8601 time as the runner writes it (`…Z` or `…+00:00`)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def duration_text(secs: float) -> str:
    """A duration as the CLI says one, coarsened past a minute: `6s`, `4m 05s`, `2h 03m`."""
    whole = max(int(secs), 0)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def ago_text(at: str, now: datetime) -> str:
    """How long ago `at` was at `now`: `12s ago`, `3m 02s ago` (`in 5s` for a time ahead)."""
    secs = (now - parse_time(at)).total_seconds()
    return f"{duration_text(secs)} ago" if secs >= 0 else f"in {duration_text(-secs)}"


def record_reason(record: ExecutionRecord) -> str | None:
    """Why an iteration did not pass, in one line: its error (with its kind), else the reasons
    the ratchet failed its done; None when nothing failed it."""
    if record.error_kind is not None:
        return f"{record.error_kind.value}: {record.error or ''}".rstrip(": ")
    if record.error:
        return record.error
    return None if record.tests is None else record.tests.reason_line()


def meta_reason(meta: Mapping[str, Any]) -> str | None:
    """`record_reason` of an iteration's meta.json as the history document carries it."""
    kind, error = meta.get("error_kind"), meta.get("error")
    if kind is not None:
        return f"{kind}: {error or ''}".rstrip(": ")
    if error:
        return str(error)
    reasons = (meta.get("tests") or {}).get("reasons") or []
    if not reasons:
        return None
    more = len(reasons) - 1
    return str(reasons[0]) + (f" (and {more} more)" if more else "")


# ---------------------------------------------------------------- tests and spend over time


@attrs.frozen(slots=True)
class TestsPoint:
    """The guard's test figures after one iteration."""

    __test__ = False

    iteration: int
    passed: int
    failed: int
    total: int


def tests_series(history: ExecutionHistory) -> tuple[TestsPoint, ...]:
    """Tests passing per iteration, for the iterations whose guard wrote a report, in order."""
    return history.folded(_tests_start, _tests_more).points


@attrs.frozen(slots=True)
class _TestsFold:
    last: int  # the latest iteration of the records folded in, 0 for none
    points: tuple[TestsPoint, ...]


def _tests_points(records: Sequence[ExecutionRecord]) -> tuple[TestsPoint, ...]:
    return tuple(
        TestsPoint(r.iteration, r.tests.passed, r.tests.failed, r.tests.total)
        for r in sorted(records, key=lambda r: r.iteration)
        if r.tests is not None
    )


def _tests_start(records: tuple[ExecutionRecord, ...]) -> _TestsFold:
    return _TestsFold(max((r.iteration for r in records), default=0), _tests_points(records))


def _tests_more(fold: _TestsFold, added: tuple[ExecutionRecord, ...]) -> _TestsFold | None:
    """The series with `added` after its records, when every one of them is later than all of
    those (the series is in iteration order); else None."""
    if not added:
        return fold
    if min(r.iteration for r in added) <= fold.last:
        return None
    return _TestsFold(max(r.iteration for r in added), fold.points + _tests_points(added))


@attrs.frozen(slots=True)
class SpendPoint:
    """What the run had spent once an iteration ended: `secs` after the run's first start."""

    iteration: int
    secs: float
    tokens: int
    cost_usd: float | None  # None while no iteration reported a cost


def spend_series(history: ExecutionHistory) -> tuple[SpendPoint, ...]:
    """Cumulative tokens (input + output) and cost over time, by each iteration's end."""
    return history.folded(_spend_start, _spend_more).points


@attrs.frozen(slots=True)
class _SpendFold:
    origin: datetime | None  # the earliest start, None without records
    last: tuple[datetime, int] | None  # the last point's (end, iteration)
    points: tuple[SpendPoint, ...]


def _end_key(record: ExecutionRecord) -> tuple[datetime, int]:
    return (parse_time(record.ended_at), record.iteration)


def _spend_points(
    records: Sequence[ExecutionRecord], origin: datetime, after: SpendPoint | None
) -> tuple[SpendPoint, ...]:
    """The points of `records` (sorted by end), counting on from `after`'s totals."""
    tokens, cost = (0, None) if after is None else (after.tokens, after.cost_usd)
    points = []
    for record in records:
        if record.tokens is not None:
            tokens += record.tokens.input + record.tokens.output
        if record.cost_usd is not None:
            cost = (cost or 0.0) + record.cost_usd
        secs = (parse_time(record.ended_at) - origin).total_seconds()
        points.append(SpendPoint(record.iteration, secs, tokens, cost))
    return tuple(points)


def _spend_start(records: tuple[ExecutionRecord, ...]) -> _SpendFold:
    ordered = sorted(records, key=_end_key)
    if not ordered:
        return _SpendFold(None, None, ())
    origin = min(parse_time(r.started_at) for r in ordered)
    return _SpendFold(origin, _end_key(ordered[-1]), _spend_points(ordered, origin, None))


def _spend_more(fold: _SpendFold, added: tuple[ExecutionRecord, ...]) -> _SpendFold | None:
    """The series with `added` after its records, when they ended after its last point, in
    order, and started no earlier than its origin (which every point's time counts from);
    else None."""
    if not added:
        return fold
    keys = [_end_key(record) for record in added]
    if (
        fold.origin is None
        or fold.last is None
        or keys[0] <= fold.last
        or keys != sorted(keys)
        or any(parse_time(record.started_at) < fold.origin for record in added)
    ):
        return None
    points = _spend_points(added, fold.origin, fold.points[-1])
    return _SpendFold(fold.origin, keys[-1], fold.points + points)


# ---------------------------------------------------------------- the slots' timeline


@attrs.frozen(slots=True)
class Bar:
    """One iteration on the timeline: its lane, when it ran (secs from the origin) and how it
    ended (`passed`, `failed`, `retry`, `error`, `decomposed`, or `running`)."""

    lane: int
    iteration: int
    node_id: str
    role: str
    start: float
    end: float
    outcome: str
    started_at: str


@attrs.frozen(slots=True)
class Timeline:
    """The iterations in lanes: one lane per slot (a remote job's lane is its worker's)."""

    origin: str | None
    span: float
    lanes: tuple[str, ...]
    bars: tuple[Bar, ...]


def _outcome(record: ExecutionRecord) -> str:
    if record.error_kind is not None:
        return "error"
    if record.successful:
        return "decomposed" if record.status.value == "decomposed" else "passed"
    return "retry" if record.status.value == "retry" else "failed"


def slot_timeline(
    history: ExecutionHistory, status: Mapping[str, Any], now: datetime, slots: int = 1
) -> Timeline:
    """The timeline of the run's iterations and of the jobs in flight (the status document's
    `running` and `jobs`), in at most `slots` lanes laid as the slots ran them: an iteration
    takes the first lane free at its start, else, all `slots` being taken, the lane that frees
    first: that job's slot was free again (its job waited to merge, which a meta.json's
    `ended_at` includes), so its bar ends where the next begins. A job on a worker takes that
    worker's lane."""
    spans: list[tuple[datetime, datetime, int, str, str, str, str, str | None]] = []
    for record in history.records:
        spans.append(
            (parse_time(record.started_at), parse_time(record.ended_at), record.iteration,
             record.node_id, record.role.value, _outcome(record), record.started_at, None)
        )  # fmt: skip
    done = {record.iteration for record in history.records}
    running = list(status.get("jobs") or [])
    if status.get("running") is not None and not running:
        running = [status["running"]]
    for job in running:
        if job["iteration"] in done:
            continue
        start = parse_time(job["started_at"])
        spans.append(
            (start, max(now, start), job["iteration"], job["node_id"], job["role"], "running",
             job["started_at"], job.get("worker"))
        )  # fmt: skip
    if not spans:
        return Timeline(None, 0.0, (), ())
    spans.sort(key=lambda span: (span[0], span[2]))
    origin = spans[0][0]
    lane_ends: list[datetime | None] = []  # None: a worker's lane, never a slot's
    lane_names: list[str] = []
    # Each bar's fields, its end cut where the next bar of its slot lane begins; the Bars are
    # built once, at the end (a run of thousands of iterations cuts most of them).
    rows: list[list[Any]] = []
    last_in_lane: dict[int, int] = {}
    for start, end, iteration, node_id, role, outcome, started_at, worker in spans:
        lane = _lane(lane_ends, lane_names, start, end, worker, max(slots, 1))
        at = (start - origin).total_seconds()
        before = last_in_lane.get(lane)
        if before is not None and worker is None and rows[before][5] > at:
            rows[before][5] = at
        last_in_lane[lane] = len(rows)
        rows.append(
            [lane, iteration, node_id, role, at, (end - origin).total_seconds(), outcome,
             started_at]
        )  # fmt: skip
    bars = tuple(Bar(*row) for row in rows)
    span = max(bar.end for bar in bars)
    return Timeline(spans[0][6], span, tuple(lane_names), bars)


def _lane(
    ends: list[datetime | None],
    names: list[str],
    start: datetime,
    end: datetime,
    worker: str | None,
    slots: int,
) -> int:
    """The lane an iteration from `start` to `end` takes (and books): its worker's, else the
    first slot lane free at its start, else a new slot lane while fewer than `slots`, else the
    slot lane that frees first."""
    if worker is not None:
        name = f"worker {worker}"
        if name not in names:
            ends.append(None)
            names.append(name)
        return names.index(name)
    taken = [lane for lane, ended in enumerate(ends) if ended is not None]
    free = [lane for lane in taken if (ends[lane] or start) <= start]
    if not free and len(taken) >= slots:
        free = sorted(taken, key=lambda lane: (ends[lane] or start, lane))
    if free:
        ends[free[0]] = end
        return free[0]
    ends.append(end)
    names.append(f"slot {len(taken) + 1}")
    return len(ends) - 1


# ---------------------------------------------------------------- the tree's progress


@attrs.frozen(slots=True)
class Progress:
    """The tree's leaves by where they stand: passed, running, stuck or failed, skipped, open."""

    passed: int
    running: int
    stuck: int
    skipped: int
    open: int

    @property
    def total(self) -> int:
        return self.passed + self.running + self.stuck + self.skipped + self.open


def tree_progress(rows: Sequence[Mapping[str, Any]]) -> Progress:
    """The leaves of a status document's tree rows, counted by their display state."""
    counts = dict.fromkeys(("passed", "running", "stuck", "skipped", "open"), 0)
    for row in rows:
        if not row["leaf"]:
            continue
        if row["passes"]:
            counts["passed"] += 1
        elif row["state"] == "running":
            counts["running"] += 1
        elif row["state"] in ("stuck", "failed"):
            counts["stuck"] += 1
        elif row["state"] == "skipped":
            counts["skipped"] += 1
        else:
            counts["open"] += 1
    return Progress(**counts)
