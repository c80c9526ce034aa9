"""What a run has spent against its `[budget]`, read from its history for the core to judge.

Reads the iteration history only when a budget is set, every iteration once: those missing
from the iteration directories (a clone) from the archive ref or the commit trailers, so a
budget never undercounts. Whether a budget is reached is the core's decision
(`runner_core.loop.budget`).
"""

from __future__ import annotations

from runner_core.history.records import ExecutionHistory, HistorySummary
from runner_core.loop.budget import BudgetUse, exhausted_budget
from runner_core.run.config import NO_BUDGET, Config
from runner_shell.git.history_sources import fill_missing
from runner_shell.git.repo import Repo
from runner_shell.store.iteration_log import load_history
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state


def budget_summary(paths: RunnerPaths, config: Config, run_id: str) -> HistorySummary:
    """What the run has spent, for its `[budget]`: the history is read only when one is set."""
    if config.budget == NO_BUDGET:
        return ExecutionHistory().summary()
    history, _warnings = load_history(paths, run_id)
    state = load_run_state(paths)
    next_iter = state.next_iter if state.run_id == run_id else 1
    return fill_missing(paths, Repo(paths.root), run_id, next_iter, history).history.summary()


def reached_budget(paths: RunnerPaths, config: Config, run_id: str) -> BudgetUse | None:
    """The budget the run has reached, None while every one set has room."""
    return exhausted_budget(config.budget, budget_summary(paths, config, run_id))
