"""The lines `runner loop` prints (runner_core.views.loop_lines): a wait, how the loop ended."""

from __future__ import annotations

import pytest

from runner_core.loop.budget import BudgetUse
from runner_core.loop.usage_limits import LimitWait
from runner_core.views.loop_lines import (
    budget_line,
    complete_line,
    interrupted_line,
    limit_line,
    max_steps_line,
    stuck_line,
    wait_line,
)


def test_the_wait_line_names_the_run_the_reason_the_end_and_the_seconds() -> None:
    wait = LimitWait(30, "2026-11-22T02:00:30Z", False)
    assert wait_line("run-1", wait, "rate_limited") == (
        "loop: wait run=run-1 reason=rate_limited until=2026-11-22T02:00:30Z secs=30"
    )


@pytest.mark.parametrize(
    ("use", "figures"),
    [
        (BudgetUse("cost_usd", 5.25, 5.0), "budget=cost_usd spent=5.25 limit=5"),
        (BudgetUse("tokens", 1200.0, 1000.0), "budget=tokens spent=1200 limit=1000"),
        (
            BudgetUse("wall_secs", 3600.123456, 3600.0),
            "budget=wall_secs spent=3600.1235 limit=3600",
        ),
    ],
)
def test_the_budget_line_says_which_budget_spent_and_limit(use: BudgetUse, figures: str) -> None:
    assert budget_line("run-1", use, 4, 2) == (
        f"loop: status=budget run=run-1 {figures} steps=4 started_at_iter=2"
    )


def test_the_loop_s_last_lines_name_the_run_and_what_stopped_it() -> None:
    assert (
        complete_line("run-1", 4, 2) == "loop: status=complete run=run-1 steps=4 started_at_iter=2"
    )
    assert stuck_line("run-1", "root.2", "root/root.2", 3, 3) == (
        "loop: status=stuck run=run-1 id=root.2 path=root/root.2 attempts=3/3"
    )
    assert limit_line("run-1", 11, 10, 9, 2) == (
        "loop: status=limit run=run-1 next_iter=11 max_iterations=10 steps=9 started_at_iter=2"
    )
    assert max_steps_line("run-1", 5, 1) == (
        "loop: status=max-steps run=run-1 steps=5 started_at_iter=1"
    )
    assert interrupted_line("run-1", 130) == "loop: status=interrupted run=run-1 exit=130"
