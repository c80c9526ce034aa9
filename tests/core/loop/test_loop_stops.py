"""How the loop ends: each stop kind's exit code and `loop: status=` word, from one table."""

from __future__ import annotations

import typing

import pytest

from runner_core.loop.budget import BudgetUse
from runner_core.loop.policy import (
    STOPS,
    Continue,
    Decompose,
    LoopDecision,
    LoopState,
    Stop,
    StopKind,
    Wait,
)
from runner_core.views.loop_lines import (
    budget_line,
    complete_line,
    limit_line,
    max_steps_line,
    stuck_line,
)


@pytest.mark.parametrize(
    ("kind", "exit_code", "status"),
    [
        (StopKind.COMPLETE, 0, "complete"),
        (StopKind.STUCK, 3, "stuck"),
        (StopKind.LIMIT, 1, "limit"),
        (StopKind.BUDGET, 1, "budget"),
        (StopKind.RUNNER_ERROR, 1, "runner_error"),
        (StopKind.MAX_STEPS, 0, "max-steps"),
    ],
)
def test_each_stop_kind_ends_the_loop_with_its_exit_code_and_status_word(
    kind: StopKind, exit_code: int, status: str
) -> None:
    stop = Stop(kind, LoopState())
    assert (stop.exit_code, stop.status) == (exit_code, status)
    assert (STOPS[kind].exit_code, STOPS[kind].status) == (exit_code, status)


def test_every_stop_kind_has_exactly_one_row_in_the_table() -> None:
    assert set(STOPS) == set(StopKind)


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        (StopKind.COMPLETE, complete_line("run-1", 4, 2)),
        (StopKind.STUCK, stuck_line("run-1", "root.2", "root/root.2", 3, 3)),
        (StopKind.LIMIT, limit_line("run-1", 11, 10, 9, 2)),
        (StopKind.BUDGET, budget_line("run-1", BudgetUse("tokens", 10.0, 10.0), 4, 2)),
        (StopKind.MAX_STEPS, max_steps_line("run-1", 5, 1)),
    ],
    ids=lambda value: value.value if isinstance(value, StopKind) else "line",
)
def test_the_loop_s_last_line_says_the_status_word_of_its_stop(kind: StopKind, line: str) -> None:
    assert line.startswith(f"loop: status={STOPS[kind].status} run=run-1 ")


def test_a_loop_decision_is_one_of_four_cases() -> None:
    assert typing.get_args(LoopDecision) == (Continue, Wait, Decompose, Stop)
