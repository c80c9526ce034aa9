"""Every loop decision is one case of the union, and a stop exits as its kind's row says."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import assert_never

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.loop.policy import (
    STOPS,
    Continue,
    Decompose,
    LoopState,
    StepKind,
    StepResult,
    Stop,
    StopKind,
    Wait,
    after_step,
)
from runner_core.run.config import LoopConfig

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
NODES = ("a", "b")

configs = st.builds(
    LoopConfig,
    max_consecutive_runner_errors=st.integers(0, 6),
    max_wait_secs=st.integers(1, 604800),
    on_stuck=st.sampled_from(["stop", "decompose"]),
)
results = st.one_of(
    st.builds(
        StepResult,
        kind=st.just(StepKind.AGENT_RAN),
        node_id=st.sampled_from(NODES),
        successful=st.booleans(),
    ),
    st.builds(StepResult, kind=st.just(StepKind.RUNNER_ERROR), node_id=st.sampled_from(NODES)),
    st.builds(
        StepResult,
        kind=st.just(StepKind.LIMITED),
        node_id=st.just("a"),
        limit=st.builds(LimitSignal, st.sampled_from(list(LimitKind)), st.just("m")),
    ),
    st.builds(StepResult, kind=st.just(StepKind.STUCK), node_id=st.sampled_from(NODES)),
    st.just(StepResult(StepKind.COMPLETE)),
    st.just(StepResult(StepKind.ITERATION_LIMIT)),
)

# Which stops each step result can come to (besides the --max-steps stop): a budget stops the
# loop only before a step.
STOPS_AFTER: dict[StepKind, set[StopKind]] = {
    StepKind.AGENT_RAN: {StopKind.STUCK},  # a stuck leaf's decomposition that failed
    StepKind.RUNNER_ERROR: {StopKind.RUNNER_ERROR},
    StepKind.LIMITED: set(),
    StepKind.STUCK: {StopKind.STUCK},
    StepKind.COMPLETE: {StopKind.COMPLETE},
    StepKind.ITERATION_LIMIT: {StopKind.LIMIT},
}


@given(configs, st.lists(results, min_size=1, max_size=20), st.none() | st.integers(1, 8))
def test_every_decision_is_a_case_of_the_union_and_a_stop_exits_as_its_kind_says(
    config: LoopConfig, steps: list[StepResult], max_steps: int | None
) -> None:
    """Over any step results, each decision is Continue, Wait, Decompose or Stop; a Stop's kind
    is one its step can come to (or MAX_STEPS once --max-steps are taken), and its exit code
    and status word are that kind's row of STOPS, an exit code of 0, 1 or 3."""
    state = LoopState()
    for taken, step in enumerate(steps, start=1):
        decision = after_step(state, step, config, NOW, steps=taken, max_steps=max_steps)
        match decision:
            case Continue() | Wait() | Decompose():
                assert max_steps is None or taken < max_steps
            case Stop(kind=kind):
                capped = max_steps is not None and taken >= max_steps
                assert kind in STOPS_AFTER[step.kind] | ({StopKind.MAX_STEPS} if capped else set())
                assert decision.exit_code == STOPS[kind].exit_code in (0, 1, 3)
                assert decision.status == STOPS[kind].status
                return
            case _:
                assert_never(decision)
        state = decision.state
