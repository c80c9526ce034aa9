"""The budget lines `runner status` and `runner report` print: each configured budget spent vs
its limit, and the report's per-node figures rolled up the tree.

Decides their words; the loop's own lines (runner_core.views.loop_lines) say a budget's
figures with `spent_fields` too. Imports only the budgets' arithmetic: a report or a status
shows these without the follow views' event model (runner_core.views.follow). Never prints.
"""

from __future__ import annotations

from runner_core.loop.budget import BudgetUse, NodeTotals, figure_text


def seconds_text(milliseconds: int) -> str:
    """A duration in seconds to a tenth: `12.3s`."""
    return f"{milliseconds / 1000:.1f}s"


def spent_fields(use: BudgetUse) -> str:
    """A budget's figures, in the loop's lines and `runner status`'s."""
    return f"spent={figure_text(use.spent)} limit={figure_text(use.limit)}"


def budget_lines(uses: tuple[BudgetUse, ...]) -> tuple[str, ...]:
    """`runner status` and `report`: each configured budget, spent vs limit."""
    return tuple(
        f"budget: {use.budget} {spent_fields(use)}" + (" (reached)" if use.exhausted else "")
        for use in uses
    )


def rolled_up_lines(subtree_totals: tuple[NodeTotals, ...]) -> tuple[str, ...]:
    """`runner report`'s per-node figures rolled up the tree: a parent's include its subtree's."""
    rows = []
    for totals in subtree_totals:
        cost = "-" if totals.cost_usd is None else figure_text(totals.cost_usd)
        tokens = totals.tokens.input + totals.tokens.output
        rows.append(
            f"  {totals.node_id} executions={totals.executions} "
            f"attempts={totals.attempts_consumed} duration={seconds_text(totals.duration_ms)} "
            f"tokens={tokens} cost_usd={cost}"
        )
    return ("subtree totals:", *rows)
