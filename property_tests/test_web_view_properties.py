"""Properties of `runner serve`'s core (runner_core.views.web): roll-ups add up, deltas apply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory, ExecutionRecord, TokenUsage
from runner_core.loop.events import Event, EventOrigin, EventType, iteration_started, waiting
from runner_core.testing import trees
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome, Node, canonical_preorder
from runner_core.views.web import (
    RUN_STATES,
    LoopFacts,
    PageView,
    current_wait,
    node_detail,
    page_view,
    rollups,
    run_state_word,
    view_delta,
)
from tests.helpers.records import iterations_of

SETTINGS = settings(max_examples=200, deadline=None)
token_usages = st.none() | st.builds(
    TokenUsage, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)
)
costs = st.none() | st.integers(0, 10**4).map(lambda cents: cents / 100)


@st.composite
def trees_and_histories(draw: st.DrawFn) -> tuple[Node, ExecutionHistory]:
    tree = draw(trees(max_nodes=12))
    ids = [node.id for node, _, _ in canonical_preorder(tree)]
    records: list[ExecutionRecord] = []
    executions: dict[str, int] = {}
    for iteration, node_id in enumerate(draw(st.lists(st.sampled_from(ids), max_size=15)), 1):
        executions[node_id] = executions.get(node_id, 0) + 1
        records.append(
            ExecutionRecord(
                run_id="run-a",
                node_id=node_id,
                execution=executions[node_id],
                iteration=iteration,
                role=AgentRole.EXECUTOR,
                started_at="2026-01-01T00:00:00+00:00",
                ended_at="2026-01-01T00:00:01+00:00",
                status=AgentStatus.DONE,
                guard=GuardOutcome.PASS,
                error_kind=None,
                error=None,
                tokens=draw(token_usages),
                cost_usd=draw(costs),
                duration_ms=1000,
                attempts_before=0,
                attempts_after=0,
                backend="command",
            )
        )
    return tree, ExecutionHistory.of(records)


@SETTINGS
@given(trees_and_histories())
def test_a_rollup_is_its_own_executions_plus_its_childrens_rollups(
    case: tuple[Node, ExecutionHistory],
) -> None:
    tree, history = case
    rolled = rollups(tree, history)

    assert set(rolled) == {node.id for node, _, _ in canonical_preorder(tree)}
    for node, _, _ in canonical_preorder(tree):
        own = history.records_for(node.id)
        for kind in ("input", "output", "cached"):
            expected = sum(getattr(r.tokens, kind) for r in own if r.tokens is not None)
            expected += sum(rolled[child.id]["tokens"][kind] for child in node.children)
            assert rolled[node.id]["tokens"][kind] == expected
    everything = sum(r.cost_usd or 0.0 for r in history.records)
    root_cost = rolled[tree.id]["cost_usd"]
    # No cost reported anywhere is none shown, never a made-up 0.
    assert (root_cost is None) == all(r.cost_usd is None for r in history.records)
    assert abs((root_cost or 0.0) - everything) < 1e-6


@SETTINGS
@given(trees_and_histories())
def test_a_node_detail_lists_exactly_its_executions_in_order(
    case: tuple[Node, ExecutionHistory],
) -> None:
    tree, history = case
    for node, path, _ in canonical_preorder(tree):
        detail = node_detail(tree, history, node.id)
        assert detail is not None
        assert detail["path"] == path
        assert [e["iteration"] for e in detail["executions"]] == list(
            iterations_of(history, node.id)
        )
    assert node_detail(tree, history, "no such node") is None


NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


@st.composite
def loop_events(draw: st.DrawFn) -> tuple[Event, ...]:
    """Iterations started and waits ending from ten minutes before NOW to ten minutes after."""
    events = []
    for iteration in range(1, draw(st.integers(0, 8)) + 1):
        origin = EventOrigin("run-a", iteration, None, "2026-11-22T02:00:00Z")
        if draw(st.booleans()):
            events.append(iteration_started(origin, "executor", 0, 3))
        else:
            until = NOW + timedelta(seconds=draw(st.integers(-600, 600)))
            when = until.strftime("%Y-%m-%dT%H:%M:%SZ")
            events.append(waiting(origin, "rate_limited", when, 60))
    return tuple(events)


statuses = st.fixed_dictionaries(
    {
        "run": st.sampled_from(["started", "not-started"]),
        "running": st.none() | st.just({"iteration": 1}),
        "interrupted": st.none() | st.just({"iteration": 1}),
        "selected": st.fixed_dictionaries(
            {"status": st.sampled_from(["open", "complete", "stuck", "blocked"])}
        ),
        "next_iteration": st.integers(1, 12),
        "max_iterations": st.integers(1, 10),
        "budgets": st.lists(st.fixed_dictionaries({"exhausted": st.booleans()}), max_size=3),
    }
)


@SETTINGS
@given(statuses, loop_events(), st.booleans())
def test_waiting_is_a_live_loop_s_last_wait_still_ahead_with_no_iteration_after_it(
    status: dict[str, Any], events: tuple[Event, ...], alive: bool
) -> None:
    loop = LoopFacts(alive=alive, events=events, read_at=NOW)
    wait = current_wait(loop)
    word = run_state_word(status, loop)

    assert word in RUN_STATES
    waits = [event for event in events if event.type is EventType.WAITING]
    if wait is not None:
        after = events[len(events) - events[::-1].index(wait) :]
        assert alive and wait is waits[-1]
        assert wait.figures["until"] > NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert all(event.type is not EventType.ITERATION_STARTED for event in after)
    elif alive and waits and events[-1] is waits[-1]:
        assert waits[-1].figures["until"] <= NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (word == "waiting") == (
        wait is not None
        and status["run"] == "started"
        and status["running"] is None
        and status["interrupted"] is None
    )


STATES = ("pending", "running", "completed", "failed", "stuck")


@st.composite
def page_views(draw: st.DrawFn, ids: list[str]) -> PageView:
    """A page view of a one-level tree with these ids, random states, executions and figures."""
    rows = [
        {"id": node_id, "depth": 0 if n == 0 else 1, "state": draw(st.sampled_from(STATES))}
        | {"executions": draw(st.integers(0, 3))}
        for n, node_id in enumerate(ids)
    ]
    rollups = {row["id"]: {"cost_usd": draw(st.none() | st.integers(0, 3))} for row in rows}
    status = {"tree": rows, "removed": [], "next_iteration": draw(st.integers(1, 3))}
    overview = {"state": draw(st.sampled_from(RUN_STATES)), "rollups": rollups}
    return page_view(status, overview)


node_ids = st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True)


@SETTINGS
@given(st.data(), node_ids, node_ids)
def test_applying_a_delta_to_the_page_before_gives_the_page_after(
    data: st.DataObject, ids: list[str], other_ids: list[str]
) -> None:
    before = data.draw(page_views(ids))
    after = data.draw(page_views(data.draw(st.sampled_from([ids, other_ids]))))
    delta = view_delta(before, after)

    if delta is None:
        assert before == after
        return
    assert delta["head"] is None or delta["head"] == after.head
    if delta["reshaped"]:
        shape = [(row["id"], row["depth"]) for row in before.rows]
        assert shape != [(row["id"], row["depth"]) for row in after.rows]
        assert delta["rows"] == []
        return
    head = before.head if delta["head"] is None else delta["head"]
    changed = {row["id"]: row for row in delta["rows"]}
    assert PageView(head, tuple(changed.get(row["id"], row) for row in before.rows)) == after
    assert all(row not in before.rows for row in delta["rows"])
