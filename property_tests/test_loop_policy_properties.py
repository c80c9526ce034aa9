"""Invariants of the loop policy over any sequence of step results and any [loop] config."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.loop.events import EventOrigin, EventType, event_line
from runner_core.loop.policy import (
    Continue,
    Decompose,
    LoopDecision,
    LoopState,
    StepKind,
    StepResult,
    Stop,
    Wait,
    after_step,
    decision_events,
    ends_the_loop,
)
from runner_core.run.config import HOOK_NAMES, LoopConfig
from tests.helpers import SCHEMAS

EVENTS_SCHEMA = json.loads((SCHEMAS / "events.schema.json").read_text(encoding="utf-8"))
NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
NODES = ("a", "b")

configs = st.builds(
    LoopConfig,
    max_consecutive_runner_errors=st.integers(0, 6),
    runner_error_backoff_secs=st.lists(st.integers(0, 10**6), min_size=1, max_size=4).map(tuple),
    max_wait_secs=st.integers(1, 604800),
    on_stuck=st.sampled_from(["stop", "decompose"]),
)
limits = st.builds(
    LimitSignal,
    kind=st.sampled_from(list(LimitKind)),
    message=st.just("m"),
    retry_at=st.none() | st.sampled_from(["2026-11-22T01:00:00Z", "2026-12-25T00:00:00Z"]),
    retry_after_secs=st.none() | st.integers(0, 10**8),
)
results = st.one_of(
    st.builds(
        StepResult,
        kind=st.just(StepKind.AGENT_RAN),
        node_id=st.sampled_from(NODES),
        successful=st.booleans(),
    ),
    st.builds(StepResult, kind=st.just(StepKind.RUNNER_ERROR), node_id=st.sampled_from(NODES)),
    st.builds(StepResult, kind=st.just(StepKind.LIMITED), node_id=st.just("a"), limit=limits),
    st.builds(StepResult, kind=st.just(StepKind.STUCK), node_id=st.sampled_from(NODES)),
)


def decisions(config: LoopConfig, steps: list[StepResult]) -> list[LoopDecision]:
    """The decisions for `steps`, up to and including the first STOP."""
    state, made = LoopState(), []
    for step in steps:
        decision = after_step(state, step, config, NOW)
        made.append(decision)
        if isinstance(decision, Stop):
            break
        state = decision.state
    return made


@given(configs, st.lists(results, max_size=20))
def test_the_loop_never_sleeps_longer_than_max_wait_secs(
    config: LoopConfig, steps: list[StepResult]
) -> None:
    """Every WAIT lasts 0..max_wait_secs; only WAIT decisions carry a wait."""
    for decision in decisions(config, steps):
        if isinstance(decision, Wait):
            assert 0 <= decision.wait.secs <= config.max_wait_secs


@given(configs, st.lists(st.sampled_from(["error", "limit"]), max_size=20), limits)
def test_consecutive_runner_errors_stop_exactly_at_the_configured_count(
    config: LoopConfig, kinds: list[str], limit: LimitSignal
) -> None:
    """With only runner errors and waits, the loop stops at the max(1, N)-th runner error, never
    before, and waits never stop it."""
    error = StepResult(StepKind.RUNNER_ERROR, "a")
    limited = StepResult(StepKind.LIMITED, "a", limit=limit)
    steps = [error if kind == "error" else limited for kind in kinds]
    made = decisions(config, steps)
    errors_seen = sum(1 for step in steps[: len(made)] if step.kind is StepKind.RUNNER_ERROR)
    stop_at = max(1, config.max_consecutive_runner_errors)
    last = made[-1] if made else None
    stopped = isinstance(last, Stop)
    assert stopped == (kinds.count("error") >= stop_at)
    if isinstance(last, Stop):
        assert errors_seen == stop_at
        assert steps[len(made) - 1].kind is StepKind.RUNNER_ERROR
        assert last.exit_code == 1


@given(configs, st.lists(results, max_size=25))
def test_a_leaf_whose_decomposition_concluded_is_never_decomposed_again(
    config: LoopConfig, steps: list[StepResult]
) -> None:
    """Per node, DECOMPOSE decisions after a concluded decomposition of it (an agent run on the
    node being decomposed): none; and with on_stuck = "stop" the loop never decomposes."""
    state, concluded = LoopState(), set()
    for step in steps:
        decision = after_step(state, step, config, NOW)
        if isinstance(decision, Decompose):
            assert config.on_stuck == "decompose"
            assert decision.node_id not in concluded
        if step.kind is StepKind.AGENT_RAN and step.node_id == state.decomposing:
            concluded.add(step.node_id)
        if isinstance(decision, Stop):
            break
        state = decision.state


@given(configs, st.lists(results, max_size=20))
def test_stops_have_a_documented_exit_code_and_hooks_are_known_names(
    config: LoopConfig, steps: list[StepResult]
) -> None:
    """A STOP exits 0, 1 or 3 with a status word; every decision's hooks are [hooks] names, one
    per event at most."""
    for decision in decisions(config, steps):
        assert set(decision.hooks) <= set(HOOK_NAMES)
        assert len(decision.hooks) <= len(decision.events)
        if isinstance(decision, Stop):
            assert decision.exit_code in (0, 1, 3) and decision.status


@given(configs, st.lists(results, min_size=1, max_size=12))
def test_every_loop_decision_becomes_exactly_its_events_and_they_fit_the_schema(
    config: LoopConfig, steps: list[StepResult]
) -> None:
    state = LoopState()
    origin = EventOrigin("run-1", 3, None, "2026-11-22T02:00:00Z")
    for step in steps:
        decision = after_step(state, step, config, NOW)
        built = decision_events(decision, origin, config, step, 1)
        assert tuple(event.type for event in built) == decision.events
        for event in built:
            jsonschema.validate(json.loads(event_line(event)), EVENTS_SCHEMA)
            # `runner follow` ends exactly where the loop stops.
            stops_here = isinstance(decision, Stop) and event is built[-1]
            assert ends_the_loop(event) == stops_here
        if isinstance(decision, Stop):
            break
        state = decision.state


@given(configs, results, st.integers(1, 5), st.integers(0, 3))
def test_a_loop_with_its_max_steps_taken_never_waits_and_keeps_its_other_decisions(
    config: LoopConfig, step: StepResult, max_steps: int, over: int
) -> None:
    """Once `--max-steps` are taken no step follows: a wait, a go-on or a hand-over to the
    decomposer becomes a STOP exiting 0 with the same state and events minus `waiting`; any
    other is unchanged."""
    free = after_step(LoopState(), step, config, NOW)
    capped = after_step(LoopState(), step, config, NOW, steps=max_steps + over, max_steps=max_steps)
    assert not isinstance(capped, Wait)
    if isinstance(free, Wait | Continue | Decompose):
        assert isinstance(capped, Stop)
        assert (capped.exit_code, capped.state) == (0, free.state)
        assert capped.events == tuple(e for e in free.events if e is not EventType.WAITING)
    else:
        assert capped == free
