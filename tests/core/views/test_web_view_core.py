"""runner_core.views.web: the overview's run state word, the current wait and the page's deltas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from runner_core.loop.events import Event, EventOrigin, iteration_started, waiting
from runner_core.views.web import (
    RUN_STATES,
    LoopFacts,
    current_wait,
    page_view,
    run_state_word,
    view_delta,
)

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
ORIGIN = EventOrigin("run-1", 3, None, "2026-11-22T02:59:00Z")
WAIT = waiting(ORIGIN, "rate_limited", "2026-11-22T03:05:00Z", 360)
OVER = waiting(ORIGIN, "usage_limited", "2026-11-22T02:59:30Z", 30)
STARTED = iteration_started(ORIGIN, "executor", 0, 3)
EXHAUSTED = [{"budget": "cost_usd", "spent": 1.5, "limit": 1, "exhausted": True}]


def status(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "run": "started",
        "running": None,
        "interrupted": None,
        "selected": {"status": "open"},
        "next_iteration": 3,
        "max_iterations": 10,
        "budgets": [{"budget": "tokens", "spent": 10, "limit": 100, "exhausted": False}],
    }
    return document | changes


def loop(*events: Event, alive: bool = True) -> LoopFacts:
    return LoopFacts(alive=alive, events=events, read_at=NOW)


@pytest.mark.parametrize(
    ("changes", "word"),
    [
        ({"run": "not-started"}, "not-started"),
        ({"running": {"iteration": 3}, "selected": {"status": "complete"}}, "running"),
        ({"interrupted": {"iteration": 3}}, "interrupted"),
        ({"selected": {"status": "complete"}, "next_iteration": 11}, "complete"),
        ({"selected": {"status": "stuck"}}, "stuck"),
        ({"next_iteration": 11}, "limit"),
        ({"budgets": EXHAUSTED}, "budget"),
        ({"budgets": EXHAUSTED, "selected": {"status": "stuck"}}, "budget"),
        ({"budgets": EXHAUSTED, "selected": {"status": "complete"}}, "complete"),
        ({}, "idle"),
    ],
)
def test_the_run_state_word(changes: dict[str, Any], word: str) -> None:
    assert run_state_word(status(**changes)) == word
    assert word in RUN_STATES


@pytest.mark.parametrize(
    ("facts", "word"),
    [
        (loop(), "running"),
        (loop(STARTED, WAIT), "waiting"),
        (loop(WAIT, STARTED), "running"),
        (loop(OVER), "running"),
        (loop(STARTED, WAIT, alive=False), "idle"),
    ],
)
def test_a_live_runner_is_running_between_iterations_and_waiting_through_a_wait(
    facts: LoopFacts, word: str
) -> None:
    assert run_state_word(status(), facts) == word


def test_a_wait_beats_the_tree_but_not_an_agent_at_work() -> None:
    assert run_state_word(status(selected={"status": "stuck"}), loop(WAIT)) == "waiting"
    assert run_state_word(status(running={"iteration": 3}), loop(WAIT)) == "running"


def test_the_current_wait_is_the_last_wait_after_the_last_iteration_started() -> None:
    assert current_wait(loop(STARTED, WAIT)) == WAIT
    assert current_wait(loop(WAIT, STARTED)) is None
    assert current_wait(loop(STARTED, OVER)) is None
    assert current_wait(LoopFacts(alive=True, events=(WAIT,))) is None  # no clock reading


def documents(**rows: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A status document whose tree has these rows (id -> state) under root, and its overview."""
    tree = [{"id": "root", "depth": 0, "state": "pending"}]
    tree += [{"id": node_id, "depth": 1, "state": state} for node_id, state in rows.items()]
    rollup = {"tokens": {"input": 0, "output": 0, "cached": 0}, "cost_usd": None}
    document = status(tree=tree, removed=[])
    overview = {"state": "idle", "iteration": 0, "loop_alive": False, "wait": None}
    return document, overview | {"rollups": {row["id"]: rollup for row in tree}}


def test_the_page_view_splits_the_documents_into_a_head_and_rows_with_their_rollup() -> None:
    document, overview = documents(a="pending")
    view = page_view(document, overview)

    assert "tree" not in view.head["status"] and "rollups" not in view.head["overview"]
    assert view.head["status"]["next_iteration"] == 3
    assert [row["id"] for row in view.rows] == ["root", "a"]
    assert view.rows[1]["rollup"] == overview["rollups"]["a"]


def test_a_delta_carries_only_what_changed_each_value_whole() -> None:
    before = page_view(*documents(a="pending", b="pending"))
    document, overview = documents(a="completed", b="pending")
    after = page_view(document, overview)
    moved_on = page_view(status(tree=document["tree"], removed=[], next_iteration=4), overview)

    assert view_delta(None, before) is None  # the first reading is the baseline
    assert view_delta(before, before) is None
    assert view_delta(before, after) == {"head": None, "rows": [after.rows[1]], "reshaped": False}
    assert view_delta(after, moved_on) == {"head": moved_on.head, "rows": [], "reshaped": False}


def test_a_reshaped_tree_is_a_delta_that_asks_for_the_documents() -> None:
    before = page_view(*documents(a="pending"))
    after = page_view(*documents(a="pending", b="pending"))

    assert view_delta(before, after) == {"head": after.head, "rows": [], "reshaped": True}
