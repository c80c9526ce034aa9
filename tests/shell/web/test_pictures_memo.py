"""Specification of the pictures' memo (runner_shell/web/pictures.py): `runner serve` draws a
picture again only when what it is drawn from is another object, or the clock while an
iteration runs; what it draws is what a drawing without the memo gives. The status cache keeps
the history object while a new reading finds no new record, so its pictures stay drawn."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runner_core.history.records import ExecutionHistory
from runner_shell.git.run_checkout import locate_run
from runner_shell.web.facts import PageFacts
from runner_shell.web.pictures import DrawingMemo, pictures_html
from runner_shell.web.serve import Api, StatusCache
from tests.helpers.e2e import ProjectFactory
from tests.shell.web.test_serve import completed_run

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ROWS = [{"leaf": True, "passes": False, "state": "pending"}]


def facts(status: dict[str, Any], history: ExecutionHistory, now: datetime = NOW) -> PageFacts:
    return PageFacts(status, {}, history, now)


def running_status() -> dict[str, Any]:
    job = {"iteration": 1, "node_id": "a", "role": "executor", "started_at": "2026-01-01T11:59:00Z"}
    return {"tree": ROWS, "running": job, "jobs": None}


def test_the_same_reading_is_not_drawn_again() -> None:
    memo: DrawingMemo = {}
    page = facts({"tree": ROWS}, ExecutionHistory())
    first = pictures_html(page, memo)
    drawn = {name: svg for name, (_, svg) in memo.items()}
    assert pictures_html(page, memo) == first == pictures_html(page)
    assert all(memo[name][1] is svg for name, svg in drawn.items())


def test_another_reading_is_drawn_again_even_when_equal() -> None:
    memo: DrawingMemo = {}
    pictures_html(facts({"tree": ROWS}, ExecutionHistory()), memo)
    spend = memo["spend"][1]
    again = facts({"tree": list(ROWS)}, ExecutionHistory())
    assert pictures_html(again, memo) == pictures_html(again)
    assert memo["spend"][1] is not spend


def test_the_timeline_of_a_running_iteration_follows_the_clock() -> None:
    memo: DrawingMemo = {}
    status, history = running_status(), ExecutionHistory()
    pictures_html(facts(status, history), memo)
    spend, timeline = memo["spend"][1], memo["timeline"][1]
    later = facts(status, history, NOW + timedelta(minutes=5))
    assert pictures_html(later, memo) == pictures_html(later)
    assert memo["spend"][1] is spend
    assert memo["timeline"][1] != timeline


def test_a_reading_that_found_no_new_record_keeps_the_history_drawn_from(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    paths, repo = locate_run(project.root)
    api, cache = Api(paths, repo, None), StatusCache()
    first, _ = cache.reading(api, False)
    state = paths.run_state
    state.write_bytes(state.read_bytes())  # a status source changed: read again
    os.utime(state, ns=(1, 1))
    second, _ = cache.reading(api, False)
    assert second is not first and len(second.history.records) == 3
    assert second.history is first.history
