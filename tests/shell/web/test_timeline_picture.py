"""Specification of the timeline's extent (runner_shell/web/pictures.py): a run of up to
TIMELINE_BARS iterations shows every one; a longer run its latest TIMELINE_BARS, so a long
run's picture costs what it shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs

from runner_core.history.records import ExecutionHistory
from runner_shell.web.facts import PageFacts
from runner_shell.web.pictures import TIMELINE_BARS, pictures_html
from tests.helpers.records import record

NOW = datetime(2026, 1, 2, tzinfo=UTC)
STATUS: dict[str, Any] = {"tree": [], "running": None, "jobs": None}


def history(count: int) -> ExecutionHistory:
    def at(secs: int) -> str:
        return f"2026-01-01T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}Z"

    return ExecutionHistory(
        tuple(
            attrs.evolve(record(n), started_at=at(2 * n), ended_at=at(2 * n + 1))
            for n in range(1, count + 1)
        )
    )


def iterations(count: int) -> list[int]:
    html = pictures_html(PageFacts(STATUS, {}, history(count), NOW))
    return [int(chunk.split('"', 1)[0]) for chunk in html.split('data-iter="')[1:]]


def test_a_run_of_up_to_the_limit_shows_every_iteration() -> None:
    assert iterations(TIMELINE_BARS) == list(range(1, TIMELINE_BARS + 1))


def test_a_longer_run_shows_its_latest_iterations() -> None:
    count = TIMELINE_BARS + 700
    assert iterations(count) == list(range(701, count + 1))
