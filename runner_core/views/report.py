"""What `runner report` shows: a run's summary, its per-node table, the slowest iterations,
the operator commits and the most retried nodes.

Decides the report (from the figures the shell gathers: history, latest tree, budget), the
content and key order of `runner report --json` and its lines. Never reads a file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from runner_core.history.records import (
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    HistorySummary,
    MergeReruns,
    NodeDisplayState,
    NodeStats,
    display_states,
    most_retried,
    node_stats,
    slowest,
    summarize,
)
from runner_core.json_form import Shape, json_form, shaped
from runner_core.loop.budget import (
    BudgetUse,
    NodeTotals,
    budget_uses,
    rolled_up_totals,
)
from runner_core.run.config import NO_BUDGET, BudgetConfig
from runner_core.run.operator_actions import OperatorAction, action_text
from runner_core.tree.model import Node, canonical_preorder
from runner_core.views.budget_lines import budget_lines, rolled_up_lines
from runner_core.views.history import record_status
from runner_core.views.layout import duration_text, table, tokens_text
from runner_core.views.suite import SuiteView, suite_lines, suite_view

TOP_N = 5
# `execution_order` folds repeats and shows at most this many groups.
ORDER_GROUPS = 20


@attrs.frozen(slots=True)
class RunFigures:
    """Everything the report and the metrics of one run are computed from.

    `tree` is the run's latest tree (None when none could be read); `running_node_id` names
    the node of an iteration in progress, if any.
    """

    run_id: str
    history: ExecutionHistory
    tree: Node | None
    next_iteration: int
    max_iterations: int
    running_node_id: str | None = None
    operator_actions: tuple[OperatorAction, ...] = ()
    budget: BudgetConfig = NO_BUDGET

    def states(self) -> dict[str, NodeDisplayState]:
        if self.tree is None:
            return {}
        return display_states(self.tree, self.history, self.running_node_id)


@attrs.frozen(slots=True)
class NodeReportRow:
    stats: NodeStats
    path: str | None  # None when the node is no longer in the tree
    attempts: int | None
    max_attempts: int | None
    state: NodeDisplayState | None  # None when no tree was available


def _node_row_json(row: NodeReportRow) -> dict[str, Any]:
    stats = row.stats
    return {
        "node_id": stats.node_id,
        "path": row.path,
        "state": json_form(row.state),
        "executions": stats.executions,
        "successful_executions": stats.successful_executions,
        "failed_executions": stats.failed_executions,
        "attempts_consumed": stats.attempts_consumed,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "total_duration_ms": stats.total_duration_ms,
        "tokens": json_form(stats.tokens),
        "last_iteration": stats.last_iteration,
        "last_status": stats.last_status.value,
        "last_guard": stats.last_guard.value,
    }


def _slowest_json(record: ExecutionRecord) -> dict[str, Any]:
    keys = ("node_id", "duration_ms", "status", "guard")
    return {"iter": record.iteration, **{key: json_form(getattr(record, key)) for key in keys}}


def _retried_json(stats: NodeStats) -> dict[str, Any]:
    keys = ("node_id", "attempts_consumed", "executions")
    return {key: getattr(stats, key) for key in keys}


def _backend_json(backend: tuple[str, HistorySummary]) -> dict[str, Any]:
    name, summary = backend
    return {
        "backend": name,
        "iterations": summary.total_executions,
        "successful_executions": summary.successful_executions,
        "success_rate": summary.success_rate,
        "tokens": json_form(summary.total_tokens),
        "cost_usd": summary.total_cost_usd,
    }


def _each(encode: Callable[[Any], Any]) -> dict[str, Shape]:
    """The metadata of a field whose items each have an encoding of their own."""
    return shaped(encode=lambda items: [encode(item) for item in items])


def _actions_json(actions: tuple[OperatorAction, ...]) -> dict[str, Any]:
    return {"count": len(actions), "actions": json_form(actions)}


@attrs.frozen(slots=True)
class NodeReruns:
    node_id: str
    reruns: MergeReruns = attrs.field(metadata=shaped(inline=True))


@attrs.frozen(slots=True)
class ReportReruns:
    """`merge_reruns`, only in a run that had one: what parallelism cost, in all and per node."""

    total: MergeReruns = attrs.field(metadata=shaped(inline=True))
    nodes: tuple[NodeReruns, ...]


def _report_reruns(report: Report) -> ReportReruns | None:
    total = report.summary.merge_reruns
    if total.count == 0:
        return None
    nodes = (NodeReruns(r.stats.node_id, r.stats.merge_reruns) for r in report.nodes)
    return ReportReruns(total, tuple(node for node in nodes if node.reruns.count > 0))


@attrs.frozen(slots=True)
class Report:
    """`runner report --json` (schemas/views/report.schema.json), each field a key in order."""

    run_id: str
    summary: HistorySummary
    nodes: tuple[NodeReportRow, ...] = attrs.field(metadata=_each(_node_row_json))
    slowest: tuple[ExecutionRecord, ...] = attrs.field(metadata=_each(_slowest_json))
    most_retried: tuple[NodeStats, ...] = attrs.field(metadata=_each(_retried_json))
    operator_actions: tuple[OperatorAction, ...] = attrs.field(
        default=(), metadata=shaped(encode=_actions_json)
    )
    # Each configured budget, spent vs limit; every node of the tree with its subtree's figures.
    budgets: tuple[BudgetUse, ...] = ()
    subtree_totals: tuple[NodeTotals, ...] = ()
    merge_reruns: ReportReruns | None = attrs.field(
        init=False,
        default=attrs.Factory(_report_reruns, takes_self=True),
        metadata=shaped(omit_none=True),
    )
    tests: SuiteView | None = None  # the guard's test figures, once one wrote a report
    # Each backend that ran an iteration (`[agent] fallback`), by name: what its iterations did.
    backends: tuple[tuple[str, HistorySummary], ...] = attrs.field(
        default=(), metadata=_each(_backend_json)
    )
    attempts: AgentAttempts = attrs.field(factory=lambda: AgentAttempts(0, 0, ()))
    warnings: tuple[str, ...] = ()  # what could not be read


def backend_summaries(history: ExecutionHistory) -> tuple[tuple[str, HistorySummary], ...]:
    """Each backend's iterations summarised on their own, sorted by backend name. A run with
    one backend is summarised as the whole history is (computed once, kept with it), and each
    backend's records are a part of the history's, in its order: none is sorted again."""
    names = sorted({record.backend for record in history.records})
    if len(names) == 1:
        return ((names[0], summarize(history)),)
    return tuple(
        (
            name,
            summarize(
                ExecutionHistory(
                    tuple(record for record in history.records if record.backend == name)
                )
            ),
        )
        for name in names
    )


RUNNER_ERROR_WORDS = ("conflict", "interrupted", "rate_limited", "runner_error")


@attrs.frozen(slots=True)
class AgentAttempts:
    """The iterations whose agent gave an answer (no runner error) and how many succeeded, and
    the runner errors apart, by kind: the success rate a user can act on."""

    attempts: int = attrs.field(metadata=shaped(key="agent_attempts"))
    successful: int
    success_rate: float = attrs.field(
        init=False,
        default=attrs.Factory(lambda a: a.successful / a.attempts if a.attempts else 0.0, True),
    )
    # By RUNNER_ERROR_WORDS, each once.
    runner_errors: tuple[tuple[str, int], ...] = attrs.field(metadata=shaped(encode=dict))


def agent_attempts(records: Sequence[ExecutionRecord]) -> AgentAttempts:
    """One pass over the records (a long run's report reads thousands)."""
    attempts = successful = 0
    words: Counter[str] = Counter()
    for record in records:
        if record.error_kind is ErrorKind.RUNNER:
            words[record_status(record)] += 1
        else:
            attempts += 1
            successful += record.successful
    return AgentAttempts(
        attempts,
        successful,
        tuple((word, words.get(word, 0)) for word in RUNNER_ERROR_WORDS),
    )


def build_report(figures: RunFigures, top: int = TOP_N) -> Report:
    """Executed nodes in the tree's canonical order, then the ones it lost, sorted by id."""
    # Computed once: the per-node table, the most retried and the subtree totals all read it.
    stats_rows = node_stats(figures.history)
    stats = {row.node_id: row for row in stats_rows}
    states = figures.states()
    placed: dict[str, tuple[str, Node]] = {}
    if figures.tree is not None:
        for tree_node, tree_path, _ in canonical_preorder(figures.tree):
            placed.setdefault(tree_node.id, (tree_path, tree_node))
    order = [node_id for node_id in placed if node_id in stats]
    order += sorted(node_id for node_id in stats if node_id not in placed)
    rows = []
    for node_id in order:
        path: str | None = None
        node: Node | None = None
        if node_id in placed:
            path, node = placed[node_id]
        rows.append(
            NodeReportRow(
                stats=stats[node_id],
                path=path,
                attempts=node.attempts if node is not None else None,
                max_attempts=node.max_attempts if node is not None else None,
                state=states.get(node_id),
            )
        )
    summary = summarize(figures.history)
    return Report(
        run_id=figures.run_id,
        summary=summary,
        nodes=tuple(rows),
        slowest=slowest(figures.history, top),
        most_retried=most_retried(figures.history, top, stats_rows),
        operator_actions=figures.operator_actions,
        budgets=budget_uses(figures.budget, summary),
        subtree_totals=(
            tuple(rolled_up_totals(figures.tree, figures.history, stats_rows).values())
            if figures.tree is not None
            else ()
        ),
        tests=suite_view(figures.history.records),
        backends=backend_summaries(figures.history),
        attempts=agent_attempts(figures.history.records),
    )


def _run_groups(order: Sequence[str]) -> str:
    """`root, root.1 (x2), root.2 (x3)`: consecutive repeats folded, long orders cut."""
    groups: list[tuple[str, int]] = []
    for node_id in order:
        if groups and groups[-1][0] == node_id:
            groups[-1] = (node_id, groups[-1][1] + 1)
        else:
            groups.append((node_id, 1))
    words = [node_id if n == 1 else f"{node_id} (x{n})" for node_id, n in groups]
    if len(words) > ORDER_GROUPS:
        words = [*words[:ORDER_GROUPS], f"… ({len(words) - ORDER_GROUPS} more)"]
    return ", ".join(words) or "-"


def _node_rows(report: Report) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for row in report.nodes:
        stats = row.stats
        attempts = "-" if row.attempts is None else f"{row.attempts}/{row.max_attempts}"
        rows.append(
            (
                stats.node_id,
                row.state.value if row.state is not None else "-",
                str(stats.executions),
                str(stats.successful_executions),
                str(stats.failed_executions),
                str(stats.attempts_consumed),
                attempts,
                duration_text(stats.total_duration_ms),
                tokens_text(stats.tokens),
            )
        )
    return rows


def _retried_rows(retried: Sequence[NodeStats]) -> list[tuple[str, ...]]:
    return [(s.node_id, str(s.attempts_consumed), str(s.executions)) for s in retried]


def _reruns_cells(reruns: MergeReruns) -> tuple[str, ...]:
    cost = "-" if reruns.cost_usd is None else f"{reruns.cost_usd:.4f}"
    return (str(reruns.count), duration_text(reruns.duration_ms), tokens_text(reruns.tokens), cost)


def merge_rerun_lines(report: Report) -> list[str]:
    """Each node's iterations run again after a merge, then the run's: none in a run without."""
    total = report.summary.merge_reruns
    if total.count == 0:
        return []
    rows = [
        (row.stats.node_id, *_reruns_cells(row.stats.merge_reruns))
        for row in report.nodes
        if row.stats.merge_reruns.count > 0
    ]
    heads = ("NODE", "RERUNS", "DURATION", "TOKENS in/out/cached", "COST_USD")
    count, duration, tokens, cost = _reruns_cells(total)
    return [
        "merge reruns:",
        *table(heads, rows, indent="  "),
        f"  total: reruns={count} duration={duration} tokens={tokens} cost_usd={cost}",
    ]


def _rate_text(attempts: AgentAttempts) -> str:
    """`50.0% of 4 agent attempts (runner errors apart: conflict=1 ...)`."""
    apart = " ".join(f"{word}={count}" for word, count in attempts.runner_errors)
    return f"{attempts.success_rate:.1%} of {attempts.attempts} agent attempts ({apart} apart)"


def render_report(report: Report) -> list[str]:
    out = [f"report: run={report.run_id}", "summary:"]
    out += table(("KEY", "VALUE"), _summary_facts(report), indent="  ")[1:]
    out.append("nodes:")
    if report.nodes:
        headers = ("NODE", "STATE", "EXEC", "OK", "FAILED", "CONSUMED", "ATTEMPTS", "DURATION")
        out += table((*headers, "TOKENS in/out/cached"), _node_rows(report), indent="  ")
    else:
        out.append("  none")
    out += merge_rerun_lines(report)
    out += budget_lines(report.budgets)
    if report.subtree_totals:
        out += rolled_up_lines(report.subtree_totals)
    out += suite_lines(report.tests)
    out += _slowest_lines(report)
    out.append("operator actions:")
    out += [
        f"  before iter {action.before_iteration}: {action_text(action)}"
        for action in report.operator_actions
    ] or ["  none"]
    out += _backend_lines(report)
    out.append("most retried:")
    retried = _retried_rows(report.most_retried)
    retried_heads = ("NODE", "ATTEMPTS_CONSUMED", "EXECUTIONS")
    out += table(retried_heads, retried, indent="  ") if retried else ["  none"]
    return out


def _summary_facts(report: Report) -> list[tuple[str, str]]:
    """The report's `summary:` section, one (key, value) a line."""
    summary = report.summary
    tokens = summary.total_tokens
    cost = summary.total_cost_usd
    return [
        ("total_executions", str(summary.total_executions)),
        ("successful_executions", str(summary.successful_executions)),
        ("failed_executions", str(summary.failed_executions)),
        ("success_rate", _rate_text(report.attempts)),
        ("total_duration", duration_text(round(summary.total_duration * 1000))),
        ("total_tokens", f"input={tokens.input} output={tokens.output} cached={tokens.cached}"),
        ("nodes_executed", str(summary.nodes_executed)),
        ("execution_order", _run_groups(summary.execution_order)),
        ("attempts_consumed", str(summary.attempts_consumed)),
        ("runner_errors", str(summary.runner_errors)),
        ("agent_errors", str(summary.agent_errors)),
        ("guard_passes", str(summary.guard_passes)),
        ("guard_failures", str(summary.guard_failures)),
        ("total_cost_usd", "-" if cost is None else f"{cost:.4f}"),
        ("operator_actions", str(len(report.operator_actions))),
    ]


def _slowest_lines(report: Report) -> list[str]:
    """The report's `slowest:` section: its slowest iterations, slowest first."""
    slow = [
        (
            str(r.iteration),
            r.node_id,
            duration_text(r.duration_ms),
            record_status(r),
            r.guard.value,
        )
        for r in report.slowest
    ]
    slow_heads = ("ITER", "NODE", "DURATION", "STATUS", "GUARD")
    return ["slowest:", *(table(slow_heads, slow, indent="  ") if slow else ["  none"])]


def _backend_lines(report: Report) -> list[str]:
    """The report's `backends:` section: one row per agent backend the run used."""
    backend_rows = [
        (
            name,
            str(summary.total_executions),
            f"{summary.success_rate:.0%}",
            tokens_text(summary.total_tokens),
            "-" if summary.total_cost_usd is None else f"{summary.total_cost_usd:.4f}",
        )
        for name, summary in report.backends
    ]
    backend_heads = ("BACKEND", "ITERATIONS", "SUCCESS", "TOKENS in/out/cached", "COST_USD")
    rows = table(backend_heads, backend_rows, indent="  ") if backend_rows else ["  none"]
    return ["backends:", *rows]
