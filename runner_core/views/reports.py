"""What the read-only inspection commands say about a run: status, history, report, metrics.

Decides the content and key order of every `--json` document of `runner status`, `history`,
`show` and `report`, the Prometheus text of `runner metrics` and the progress line of `runner
loop`, from a tree, a run state and an execution history. Never reads a file or the clock: the
shell gathers those facts, and measured values such as elapsed time are handed in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from runner_core.history.records import (
    ExecutionHistory,
    ExecutionRecord,
    HistorySummary,
    NodeDisplayState,
    NodeStats,
    display_states,
    history_summary_to_json,
    most_retried,
    node_stats,
    record_to_meta,
    slowest,
    summarize,
    tokens_to_json,
)
from runner_core.iteration.recovery import Journal
from runner_core.iteration.state_update import TRANSITIONS
from runner_core.loop.budget import (
    BudgetUse,
    NodeTotals,
    budget_use_to_json,
    budget_uses,
    rolled_up_totals,
    totals_to_json,
)
from runner_core.run.config import NO_BUDGET, BudgetConfig
from runner_core.run.identity import branch_for
from runner_core.run.operations import OperatorAction, action_to_json
from runner_core.run.state import RunState
from runner_core.tree.model import Node, NodeNext, canonical_preorder, iter_preorder
from runner_core.tree.selection import Selection, SelectionStatus, is_stuck, select_leaf

TOP_N = 5

# ---------------------------------------------------------------- the tree, walked


@attrs.frozen(slots=True)
class TreeRow:
    """One node of the tree as `runner status` draws it, in canonical pre-order."""

    id: str
    path: str
    depth: int
    title: str
    next: NodeNext
    is_leaf: bool
    passes: bool
    attempts: int
    max_attempts: int
    executions: int
    state: NodeDisplayState


@attrs.frozen(slots=True)
class LeafRef:
    id: str
    path: str
    attempts: int
    max_attempts: int


def leaf_counts(tree: Node) -> tuple[int, int]:
    """`(passed, total)` over the tree's leaves."""
    leaves = [node for node, _ in iter_preorder(tree) if node.is_leaf]
    return sum(1 for leaf in leaves if leaf.passes), len(leaves)


def running_node_id(journal: Journal | None, run_id: str | None) -> str | None:
    """The node of the iteration in progress, when the journal belongs to this run."""
    if journal is None or run_id is None or journal.run_id != run_id:
        return None
    return journal.node_id


# ---------------------------------------------------------------- runner status


@attrs.frozen(slots=True)
class StatusView:
    run_id: str | None
    next_iteration: int
    max_iterations: int
    leaves_passed: int
    leaves_total: int
    selection: SelectionStatus
    selected: LeafRef | None
    stuck: tuple[LeafRef, ...]
    state: RunState
    running: Journal | None
    tree: tuple[TreeRow, ...]
    removed: tuple[tuple[str, int, NodeDisplayState], ...]
    # The operator's side: an iteration whose runner died, guidance given, the
    # agent's open questions (only while a leaf is stuck) and the operator commits.
    interrupted: Journal | None = None
    guidance: str | None = None
    questions: str | None = None
    operator_actions: tuple[OperatorAction, ...] = ()
    # Each configured budget, spent vs limit, in budget_uses' order.
    budgets: tuple[BudgetUse, ...] = ()

    @property
    def branch(self) -> str | None:
        return None if self.run_id is None else branch_for(self.run_id)


@attrs.frozen(slots=True)
class OperatorFacts:
    """What status shows beside the tree: is the journal's runner alive, guidance, questions."""

    journal_alive: bool = True
    guidance: str | None = None
    questions: str | None = None
    actions: tuple[OperatorAction, ...] = ()


def _tree_rows(
    tree: Node, history: ExecutionHistory, states: Mapping[str, NodeDisplayState]
) -> tuple[list[TreeRow], list[LeafRef]]:
    """The status tree in canonical order, and its stuck leaves."""
    rows: list[TreeRow] = []
    stuck: list[LeafRef] = []
    for node, path, depth in canonical_preorder(tree):
        rows.append(
            TreeRow(
                id=node.id,
                path=path,
                depth=depth,
                title=node.title,
                next=node.next,
                is_leaf=node.is_leaf,
                passes=node.passes,
                attempts=node.attempts,
                max_attempts=node.max_attempts,
                executions=history.execution_count(node.id),
                state=states[node.id],
            )
        )
        if node.is_leaf and is_stuck(node):
            stuck.append(LeafRef(node.id, path, node.attempts, node.max_attempts))
    return rows, stuck


def status_view(
    tree: Node,
    state: RunState,
    max_iterations: int,
    history: ExecutionHistory,
    journal: Journal | None = None,
    operator: OperatorFacts = OperatorFacts(),
    budget: BudgetConfig = NO_BUDGET,
) -> StatusView:
    """Where the run stands; `history` is the current run's, `journal` any journal found.

    A journal counts only when it names this run: its node is then `running` while its runner
    is alive; once that runner is dead the iteration is `interrupted` and nothing runs.
    """
    named = journal if running_node_id(journal, state.run_id) is not None else None
    live = named if operator.journal_alive else None
    running_id = running_node_id(live, state.run_id)
    states = display_states(tree, history, running_id)
    rows, stuck = _tree_rows(tree, history, states)
    in_tree = {row.id for row in rows}
    removed = tuple(
        (node_id, history.execution_count(node_id), display)
        for node_id, display in states.items()
        if node_id not in in_tree
    )
    selection = select_leaf(tree)
    selected = None
    if selection.node is not None and selection.path is not None:
        node = selection.node
        selected = LeafRef(node.id, selection.path, node.attempts, node.max_attempts)
    passed, total = leaf_counts(tree)
    return StatusView(
        run_id=state.run_id,
        next_iteration=state.next_iter,
        max_iterations=max_iterations,
        leaves_passed=passed,
        leaves_total=total,
        selection=selection.status,
        selected=selected,
        stuck=tuple(stuck),
        state=state,
        running=live,
        tree=tuple(rows),
        removed=removed,
        interrupted=named if live is None else None,
        guidance=operator.guidance,
        questions=operator.questions if stuck else None,
        operator_actions=operator.actions,
        budgets=budget_uses(budget, history.summary()),
    )


def _leaf_ref_json(ref: LeafRef) -> dict[str, Any]:
    return {
        "id": ref.id,
        "path": ref.path,
        "attempts": ref.attempts,
        "max_attempts": ref.max_attempts,
    }


def _running_json(journal: Journal) -> dict[str, Any]:
    return {
        "iteration": journal.iteration,
        "node_id": journal.node_id,
        "role": journal.role,
        "phase": journal.phase.value,
        "started_at": journal.started_at,
    }


def _tree_row_json(row: TreeRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "path": row.path,
        "depth": row.depth,
        "title": row.title,
        "next": row.next.value,
        "leaf": row.is_leaf,
        "passes": row.passes,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "executions": row.executions,
        "state": row.state.value,
    }


def status_to_json(view: StatusView) -> dict[str, Any]:
    """`runner status --json`; schemas/views/status.schema.json documents every key."""
    selected: dict[str, Any] = {"status": view.selection.value}
    ref = _leaf_ref_json(view.selected) if view.selected is not None else None
    selected.update(ref or dict.fromkeys(("id", "path", "attempts", "max_attempts")))
    state = view.state
    return {
        "run": "not-started" if view.run_id is None else "started",
        "run_id": view.run_id,
        "branch": view.branch,
        "next_iteration": view.next_iteration,
        "max_iterations": view.max_iterations,
        "leaves": {"passed": view.leaves_passed, "total": view.leaves_total},
        "selected": selected,
        "stuck": [_leaf_ref_json(ref) for ref in view.stuck],
        "last": {
            "status": state.last_status.value if state.last_status is not None else None,
            "guard": state.last_guard.value if state.last_guard is not None else None,
            "summary": state.last_summary,
        },
        "running": _running_json(view.running) if view.running is not None else None,
        "tree": [_tree_row_json(row) for row in view.tree],
        "removed": [
            {"id": node_id, "executions": executions, "state": display.value}
            for node_id, executions, display in view.removed
        ],
        "interrupted": (_running_json(view.interrupted) if view.interrupted is not None else None),
        "guidance": view.guidance,
        "questions": view.questions,
        "operator_actions": [action_to_json(action) for action in view.operator_actions],
        "budgets": [budget_use_to_json(use) for use in view.budgets],
    }


# ---------------------------------------------------------------- runner history


def history_records(history: ExecutionHistory, node_id: str | None) -> tuple[ExecutionRecord, ...]:
    """The iterations `runner history` lists: all, or one node's, in iteration order."""
    return history.records if node_id is None else history.records_for(node_id)


def history_actions(
    actions: Sequence[OperatorAction], node_id: str | None
) -> tuple[OperatorAction, ...]:
    """The operator commits `runner history` lists: all, or one node's."""
    return tuple(action for action in actions if node_id in (None, action.node_id))


def interleaved(
    records: Sequence[ExecutionRecord], actions: Sequence[OperatorAction]
) -> tuple[ExecutionRecord | OperatorAction, ...]:
    """Iterations and operator commits in the order they happened: an operator commit comes
    before the iteration that was next when it was made."""
    entries: list[ExecutionRecord | OperatorAction] = []
    pending = list(actions)
    for record in records:
        while pending and pending[0].before_iteration <= record.iteration:
            entries.append(pending.pop(0))
        entries.append(record)
    return (*entries, *pending)


def history_to_json(
    run_id: str,
    records: Iterable[ExecutionRecord],
    node_id: str | None,
    warnings: Sequence[str],
    actions: Sequence[OperatorAction] = (),
) -> dict[str, Any]:
    """`runner history --json`: each iteration as its meta.json, plus what was skipped."""
    return {
        "run_id": run_id,
        "node": node_id,
        "iterations": [record_to_meta(record) for record in records],
        "operator_actions": [action_to_json(action) for action in actions],
        "warnings": list(warnings),
    }


# ---------------------------------------------------------------- runner show


@attrs.frozen(slots=True)
class FileFacts:
    """A file of an iteration directory; `head` only for logs, never more than was read."""

    name: str
    size: int
    head: tuple[str, ...] | None = None
    truncated: bool = False


def show_to_json(
    run_id: str,
    iteration: int,
    directory: str,
    meta: ExecutionRecord | None,
    meta_problem: str | None,
    output: Mapping[str, Any] | None,
    output_problem: str | None,
    files: Sequence[FileFacts],
) -> dict[str, Any]:
    """`runner show --json`: one iteration's meta, output, files and the heads of its logs."""
    return {
        "run_id": run_id,
        "iter": iteration,
        "dir": directory,
        "meta": record_to_meta(meta) if meta is not None else None,
        "meta_problem": meta_problem,
        "output": dict(output) if output is not None else None,
        "output_problem": output_problem,
        "files": [{"name": facts.name, "size": facts.size} for facts in files],
        "logs": [
            {
                "name": facts.name,
                "size": facts.size,
                "head": list(facts.head),
                "truncated": facts.truncated,
            }
            for facts in files
            if facts.head is not None
        ],
    }


# ---------------------------------------------------------------- runner report


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


@attrs.frozen(slots=True)
class Report:
    run_id: str
    summary: HistorySummary
    nodes: tuple[NodeReportRow, ...]
    slowest: tuple[ExecutionRecord, ...]
    most_retried: tuple[NodeStats, ...]
    operator_actions: tuple[OperatorAction, ...] = ()
    # Each configured budget, spent vs limit; every node of the tree with its subtree's figures.
    budgets: tuple[BudgetUse, ...] = ()
    subtree_totals: tuple[NodeTotals, ...] = ()


def build_report(figures: RunFigures, top: int = TOP_N) -> Report:
    """Executed nodes in the tree's canonical order, then the ones it lost, sorted by id."""
    stats = {row.node_id: row for row in node_stats(figures.history)}
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
        most_retried=most_retried(figures.history, top),
        operator_actions=figures.operator_actions,
        budgets=budget_uses(figures.budget, summary),
        subtree_totals=(
            tuple(rolled_up_totals(figures.tree, figures.history).values())
            if figures.tree is not None
            else ()
        ),
    )


def _node_row_json(row: NodeReportRow) -> dict[str, Any]:
    stats = row.stats
    return {
        "node_id": stats.node_id,
        "path": row.path,
        "state": row.state.value if row.state is not None else None,
        "executions": stats.executions,
        "successful_executions": stats.successful_executions,
        "failed_executions": stats.failed_executions,
        "attempts_consumed": stats.attempts_consumed,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "total_duration_ms": stats.total_duration_ms,
        "tokens": tokens_to_json(stats.tokens),
        "last_iteration": stats.last_iteration,
        "last_status": stats.last_status.value,
        "last_guard": stats.last_guard.value,
    }


def report_to_json(report: Report, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """`runner report --json`; schemas/views/report.schema.json documents every key."""
    return {
        "run_id": report.run_id,
        "summary": history_summary_to_json(report.summary),
        "nodes": [_node_row_json(row) for row in report.nodes],
        "slowest": [
            {
                "iter": record.iteration,
                "node_id": record.node_id,
                "duration_ms": record.duration_ms,
                "status": record.status.value,
                "guard": record.guard.value,
            }
            for record in report.slowest
        ],
        "most_retried": [
            {
                "node_id": stats.node_id,
                "attempts_consumed": stats.attempts_consumed,
                "executions": stats.executions,
            }
            for stats in report.most_retried
        ],
        "operator_actions": {
            "count": len(report.operator_actions),
            "actions": [action_to_json(action) for action in report.operator_actions],
        },
        "budgets": [budget_use_to_json(use) for use in report.budgets],
        "subtree_totals": [totals_to_json(totals) for totals in report.subtree_totals],
        "warnings": list(warnings),
    }


# ---------------------------------------------------------------- runner metrics

# The display states a leaf of the tree can have (`skipped` is only for nodes it lost).
LEAF_STATES: tuple[NodeDisplayState, ...] = tuple(
    state for state in NodeDisplayState if state is not NodeDisplayState.SKIPPED
)


def escape_label_value(value: str) -> str:
    """Prometheus text format: backslash, double quote and line feed are escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


Samples = tuple[tuple[tuple[tuple[str, str], ...], int | float], ...]


@attrs.frozen(slots=True)
class MetricFamily:
    name: str
    kind: str  # "counter" | "gauge"
    help: str
    samples: Samples

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in self.samples:
            text = ",".join(f'{key}="{escape_label_value(val)}"' for key, val in labels)
            out.append(f"{self.name}{{{text}}} {_number(value)}")
        return out


_METRICS: tuple[tuple[str, str, str], ...] = (
    (
        "runner_executions_total",
        "counter",
        "Iterations recorded in the run's log, by agent status and guard outcome.",
    ),
    (
        "runner_tokens_total",
        "counter",
        "Agent tokens reported by the run's iterations, by kind (input, output, cached).",
    ),
    (
        "runner_attempts_consumed_total",
        "counter",
        "Iterations that used up one of their node's attempts.",
    ),
    (
        "runner_errors_total",
        "counter",
        "Iterations that ended in an agent error or a runner error, by kind.",
    ),
    (
        "runner_execution_duration_seconds_total",
        "counter",
        "Wall-clock seconds spent in the run's iterations (agent and guards).",
    ),
    (
        "runner_cost_usd_total",
        "counter",
        "Agent cost in US dollars, when the agent reported one (no sample otherwise).",
    ),
    (
        "runner_next_iteration",
        "gauge",
        "The number the run's next iteration will get.",
    ),
    (
        "runner_max_iterations",
        "gauge",
        "The run-level cap on iterations (max_iterations in config.toml).",
    ),
    (
        "runner_leaves",
        "gauge",
        "Leaves of the task tree by display state.",
    ),
    (
        "runner_success_ratio",
        "gauge",
        "Successful iterations over all iterations of the run (0 when none ran).",
    ),
)


def _metric_samples(figures: RunFigures) -> dict[str, Samples]:
    history = figures.history
    summary = summarize(history)
    run = ("run_id", figures.run_id)
    outcomes = sorted(TRANSITIONS, key=lambda pair: (pair[0].value, pair[1].value))
    executions = tuple(
        (
            (run, ("status", status.value), ("guard", guard.value)),
            sum(1 for r in history.records if (r.status, r.guard) == (status, guard)),
        )
        for status, guard in outcomes
    )
    tokens = tokens_to_json(summary.total_tokens)
    leaves: Samples = ()
    if figures.tree is not None:
        states = figures.states()
        leaf_states = [states[n.id] for n, _ in iter_preorder(figures.tree) if n.is_leaf]
        leaves = tuple(
            ((run, ("state", state.value)), leaf_states.count(state)) for state in LEAF_STATES
        )
    cost = summary.total_cost_usd
    return {
        "runner_executions_total": executions,
        "runner_tokens_total": tuple(
            ((run, ("kind", kind)), tokens[kind]) for kind in ("input", "output", "cached")
        ),
        "runner_attempts_consumed_total": (((run,), summary.attempts_consumed),),
        "runner_errors_total": (
            ((run, ("kind", "agent")), summary.agent_errors),
            ((run, ("kind", "runner")), summary.runner_errors),
        ),
        "runner_execution_duration_seconds_total": (((run,), summary.total_duration),),
        "runner_cost_usd_total": (((run,), cost),) if cost is not None else (),
        "runner_next_iteration": (((run,), figures.next_iteration),),
        "runner_max_iterations": (((run,), figures.max_iterations),),
        "runner_leaves": leaves,
        "runner_success_ratio": (((run,), summary.success_rate),),
    }


def metric_families(figures: RunFigures) -> tuple[MetricFamily, ...]:
    samples = _metric_samples(figures)
    return tuple(
        MetricFamily(name, kind, help_text, samples[name]) for name, kind, help_text in _METRICS
    )


def metrics_text(figures: RunFigures) -> str:
    """`runner metrics`: Prometheus text exposition format 0.0.4, in a fixed order."""
    lines: list[str] = []
    for family in metric_families(figures):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- runner loop's progress


def elapsed_text(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` from one hour on."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def progress_line(
    iteration: int, max_iterations: int, tree: Node, elapsed_seconds: float
) -> str | None:
    """The line `runner loop` shows on a terminal before a step; None when nothing will run."""
    selection = select_leaf(tree)
    if (
        iteration > max_iterations
        or selection.status is not SelectionStatus.OPEN
        or selection.node is None
    ):
        return None
    passed, total = leaf_counts(tree)
    return (
        f"[iter {iteration}/{max_iterations}] node {selection.node.id} · "
        f"{passed}/{total} leaves passed · {elapsed_text(elapsed_seconds)} elapsed"
    )


# ---------------------------------------------------------------- runner select / validate


def selection_to_json(selection: Selection) -> dict[str, Any]:
    """`runner select --json`: the next leaf, as `select:` prints it."""
    node = selection.node
    return {
        "status": selection.status.value,
        "id": None if node is None else node.id,
        "path": selection.path,
        "attempts": None if node is None else node.attempts,
        "max_attempts": None if node is None else node.max_attempts,
    }


VALIDATION_KEYS = ("layout", "config", "tree", "run", "id", "branch")


def validation_to_json(lines: Sequence[str]) -> dict[str, Any]:
    """`runner validate --json`: the `validate: key=value` lines of a passing check, joined."""
    document: dict[str, Any] = dict.fromkeys(VALIDATION_KEYS)
    for line in lines:
        for pair in line.removeprefix("validate: ").split():
            key, _, value = pair.partition("=")
            document[key] = value
    return document
