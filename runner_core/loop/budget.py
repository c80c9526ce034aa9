"""Budgets: what a run has spent against `[budget]`, and per-node spending.

Decides whether a run's history has reached a budget (cost in USD, input + output tokens, the
sum of iteration durations), which one comes first, and the report's per-node figures rolled up
the tree (a parent's include its subtree's). Never reads the history or the config: the shell
hands in the summary, the tree and the parsed `BudgetConfig`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

import attrs

from runner_core.history.records import (
    ExecutionHistory,
    ExecutionRecord,
    HistorySummary,
    NodeStats,
    TokenUsage,
    node_stats,
)
from runner_core.json_form import shaped
from runner_core.run.config import BudgetConfig
from runner_core.tree.model import Node, canonical_preorder


def figure_text(value: float) -> str:
    """A budget figure for a `key=value` line: `165`, `0.75`, `12.3457` (4 decimals at most)."""
    if value.is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _figure_json(value: float) -> int | float:
    """A figure in a `--json` document: an integer when it is one, else 6 decimals at most."""
    return int(value) if value.is_integer() else round(value, 6)


def _cost_json(cost: Fraction | None) -> int | float | None:
    return None if cost is None else _figure_json(float(cost))


@attrs.frozen(slots=True)
class BudgetUse:
    """One configured budget: its name (cost_usd | tokens | wall_secs), spent and limit; one
    budget of `runner status --json` and `runner report --json`."""

    budget: str
    spent: float = attrs.field(metadata=shaped(encode=_figure_json))
    limit: float = attrs.field(metadata=shaped(encode=_figure_json))
    exhausted: bool = attrs.field(
        init=False, default=attrs.Factory(lambda use: use.spent >= use.limit, takes_self=True)
    )


def budget_uses(budget: BudgetConfig, summary: HistorySummary) -> tuple[BudgetUse, ...]:
    """Spent vs limit for every budget set, in the order cost_usd, tokens, wall_secs, then
    agent_iterations (`[loop] max_agent_iterations`)."""
    spent = {
        "cost_usd": summary.total_cost_usd or 0.0,
        "tokens": float(summary.total_tokens.input + summary.total_tokens.output),
        "wall_secs": summary.total_duration,
        # `[loop] max_agent_iterations`: iterations whose agent answered, runner errors apart.
        "agent_iterations": float(summary.total_executions - summary.runner_errors),
    }
    limits = {
        "cost_usd": budget.max_cost_usd,
        "tokens": budget.max_tokens,
        "wall_secs": budget.max_wall_secs,
        "agent_iterations": budget.max_agent_iterations,
    }
    return tuple(
        BudgetUse(name, spent[name], float(limit))
        for name, limit in limits.items()
        if limit is not None
    )


@attrs.frozen(slots=True)
class InFlight:
    """A parallel job not yet committed: the seconds since it started, and, once its agent has
    ended (`reported`), the tokens and cost it reported."""

    secs: float
    reported: bool = False
    tokens: TokenUsage | None = None
    cost_usd: float | None = None


def with_in_flight(summary: HistorySummary, jobs: tuple[InFlight, ...]) -> HistorySummary:
    """The run's spending with its jobs in flight counted: a budget is checked before each job
    starts against what is committed plus what the running jobs have spent. A job whose agent
    still runs is counted at the mean of the iterations whose figures are in (committed, and
    jobs whose agents have ended), so that a budget stops the scheduling before the running
    jobs' spend is known, not after."""
    if not jobs:
        return summary
    reported = _added(summary, tuple(job for job in jobs if job.reported))
    runs = summary.total_executions + sum(1 for job in jobs if job.reported)
    return _added(
        summary, tuple(job if job.reported else _estimated(job, reported, runs) for job in jobs)
    )


def _added(summary: HistorySummary, counted: tuple[InFlight, ...]) -> HistorySummary:
    tokens = summary.total_tokens
    spent, produced, cached = tokens.input, tokens.output, tokens.cached
    costs = [job.cost_usd for job in counted if job.cost_usd is not None]
    for job in counted:
        if job.tokens is not None:
            spent, produced = spent + job.tokens.input, produced + job.tokens.output
            cached += job.tokens.cached
    cost = summary.total_cost_usd
    if costs:
        cost = float(sum((Fraction(value) for value in costs), Fraction(cost or 0.0)))
    return attrs.evolve(
        summary,
        total_duration=summary.total_duration + sum(job.secs for job in counted),
        total_tokens=TokenUsage(spent, produced, cached),
        total_cost_usd=cost,
    )


def _estimated(job: InFlight, summary: HistorySummary, runs: int) -> InFlight:
    """A running job's spend taken as the mean of the `runs` iterations `summary` sums (none
    yet: nothing)."""
    if runs == 0:
        return job
    total = summary.total_tokens
    tokens = TokenUsage(total.input // runs, total.output // runs, total.cached // runs)
    cost = None if summary.total_cost_usd is None else summary.total_cost_usd / runs
    return attrs.evolve(job, tokens=tokens, cost_usd=cost)


def exhausted_budget(budget: BudgetConfig, summary: HistorySummary) -> BudgetUse | None:
    """The first budget the run has reached (spent >= limit), None while every one has room."""
    return next((use for use in budget_uses(budget, summary) if use.exhausted), None)


# ---------------------------------------------------------------- per-node roll-up


@attrs.frozen(slots=True)
class NodeTotals:
    """A node's executions with its subtree's: counts, duration, tokens and cost."""

    node_id: str
    executions: int
    attempts_consumed: int
    duration_ms: int
    tokens: TokenUsage
    # Exact, so a parent's cost does not depend on the order its children are added in.
    exact_cost_usd: Fraction | None = attrs.field(
        metadata=shaped(key="cost_usd", encode=_cost_json)
    )

    @property
    def cost_usd(self) -> float | None:
        return None if self.exact_cost_usd is None else float(self.exact_cost_usd)

    def __add__(self, other: NodeTotals) -> NodeTotals:
        costs = [cost for cost in (self.exact_cost_usd, other.exact_cost_usd) if cost is not None]
        return NodeTotals(
            self.node_id,
            self.executions + other.executions,
            self.attempts_consumed + other.attempts_consumed,
            self.duration_ms + other.duration_ms,
            self.tokens + other.tokens,
            sum(costs, Fraction(0)) if costs else None,
        )


def exact_sum(costs: Sequence[float]) -> Fraction:
    """The exact sum of `costs`, as adding their `Fraction`s gives, at a fraction of the cost:
    a float is an integer over a power of two, so every denominator divides the largest and
    the numerators add as integers."""
    ratios = [cost.as_integer_ratio() for cost in costs]
    denominator = max((below for _, below in ratios), default=1)
    return Fraction(sum(above * (denominator // below) for above, below in ratios), denominator)


def _own_cost(node_id: str, records: tuple[ExecutionRecord, ...]) -> Fraction | None:
    """What a node's own executions cost, exactly; None when none reported a cost."""
    costs = [record.cost_usd for record in records if record.cost_usd is not None]
    return exact_sum(costs) if costs else None


def _own_totals(stats: NodeStats | None, cost: Fraction | None) -> NodeTotals:
    if stats is None:
        return NodeTotals("", 0, 0, 0, TokenUsage(), cost)
    return NodeTotals(
        stats.node_id,
        stats.executions,
        stats.attempts_consumed,
        stats.total_duration_ms,
        stats.tokens,
        cost,
    )


def rolled_up_totals(
    tree: Node, history: ExecutionHistory, stats_rows: Iterable[NodeStats] | None = None
) -> dict[str, NodeTotals]:
    """Every node of `tree`, in canonical pre-order, with its subtree's executions added to its own.

    Executions of nodes no longer in the tree count nowhere here; the run's summary has them.
    `stats_rows`, when given, is `node_stats(history)` already computed (the report's, once).
    """
    nodes = [node for node, _, _ in canonical_preorder(tree)]
    rows = node_stats(history) if stats_rows is None else stats_rows
    stats = {row.node_id: row for row in rows}
    totals: dict[str, NodeTotals] = {}
    # Reversed pre-order reaches every child before its parent.
    for node in reversed(nodes):
        own = _own_totals(stats.get(node.id), history.node_folded(_own_cost, node.id))
        total = attrs.evolve(own, node_id=node.id)
        for child in node.children:
            total = total + totals[child.id]
        totals[node.id] = total
    return {node.id: totals[node.id] for node in nodes}
