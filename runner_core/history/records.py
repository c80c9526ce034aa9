"""Execution history: what the iterations of a run amount to.

Decides what a history of records sums to (counts, success rate, durations, tokens, cost,
what its merge reruns cost), the per-node table, and the display state of every node given the
tree. One record and its `meta.json` form are `execution`'s (re-exported here). Never reads the
iteration log or the clock: the shell hands in parsed `meta.json` objects and the timestamps it
wrote there.
"""

from __future__ import annotations

import enum
import heapq
import math
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any, TypeVar, cast

import attrs

from runner_core.history.execution import META_FIELDS as META_FIELDS
from runner_core.history.execution import DamagedRecord as DamagedRecord
from runner_core.history.execution import ErrorKind as ErrorKind
from runner_core.history.execution import ExecutionRecord as ExecutionRecord
from runner_core.history.execution import TokenUsage as TokenUsage
from runner_core.history.execution import figures_from_json as figures_from_json
from runner_core.history.execution import record_from_meta as record_from_meta
from runner_core.history.execution import record_to_meta as record_to_meta
from runner_core.history.tally import Tally, sum_tokens
from runner_core.json_form import json_form, shaped
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, iter_preorder
from runner_core.tree.selection import attempts_used

T = TypeVar("T")
# What `ExecutionHistory.folded` keeps: each start function's value and the fold that carries
# it to a history extended by more records.
Folds = dict[Callable[..., Any], tuple[Any, Callable[[Any, tuple[ExecutionRecord, ...]], Any]]]
NodeFolds = dict[Callable[..., Any], dict[str, Any]]

# ---------------------------------------------------------------- a history


class DuplicateIteration(ValueError):
    """Two records claim the same iteration of the same run."""

    def __init__(self, run_id: str, iteration: int) -> None:
        self.run_id = run_id
        self.iteration = iteration
        super().__init__(f"iteration {iteration} of run '{run_id}' is recorded twice")


def _history_key(record: ExecutionRecord) -> tuple[str, int]:
    return (record.run_id, record.iteration)


def _index_by_node(
    records: tuple[ExecutionRecord, ...],
) -> Mapping[str, tuple[ExecutionRecord, ...]]:
    grouped: dict[str, list[ExecutionRecord]] = {}
    for record in records:
        grouped.setdefault(record.node_id, []).append(record)
    return {node_id: tuple(group) for node_id, group in grouped.items()}


@attrs.frozen(slots=True)
class ExecutionHistory:
    """Records in `(run_id, iteration)` order, each iteration of a run at most once.

    Build one with `ExecutionHistory.of`, which sorts; the constructor only checks the order,
    raising `DuplicateIteration` for an iteration held twice and `ValueError` for records out
    of order.
    Usually it holds one run, the one the shell numbers executions in. Holding several, its
    counts span all of them in `(run_id, iteration)` order, which is not time order: number a
    run's executions in a history of that run's records alone.

    What the views derive from all the records (`folded`) or from one node's (`node_folded`)
    is computed once per history and kept with it; a history `extended` from this one carries
    it forward by folding in only the records added (a long-lived reader's history grows by
    one iteration at a time). A kept value is the one computing it afresh gives: the memo is
    never seen, and the history never changes.
    """

    records: tuple[ExecutionRecord, ...] = ()
    # A private index derived from `records` and never changed: a plain dict, since a view
    # looks every node of the tree up in it (a pmap's lookup runs in Python, a dict's in C).
    _by_node: Mapping[str, tuple[ExecutionRecord, ...]] = attrs.field(
        init=False, repr=False, eq=False
    )
    _folds: Folds = attrs.field(init=False, repr=False, eq=False)
    _node_folds: NodeFolds = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        for before, after in zip(self.records, self.records[1:], strict=False):
            if _history_key(before) == _history_key(after):
                raise DuplicateIteration(after.run_id, after.iteration)
            if _history_key(before) > _history_key(after):
                raise ValueError("records must be sorted by (run_id, iteration)")
        # A frozen class sets its derived index once, here.
        object.__setattr__(self, "_by_node", _index_by_node(self.records))
        object.__setattr__(self, "_folds", {})
        object.__setattr__(self, "_node_folds", {})

    @classmethod
    def of(cls, records: Iterable[ExecutionRecord]) -> ExecutionHistory:
        return cls(tuple(sorted(records, key=_history_key)))

    def extended(self, later: Iterable[ExecutionRecord]) -> ExecutionHistory:
        """This history with `later` after its records, the same as building it from all of
        them; only `later` is checked and indexed (a long-lived reader folds each new
        iteration into a history of thousands). Raises as the constructor does when `later`
        is not sorted after this history's last record."""
        added = tuple(later)
        if not added:
            return self
        checked = ExecutionHistory((*self.records[-1:], *added))
        grown: dict[str, tuple[ExecutionRecord, ...]] = dict(self._by_node)
        for node_id, group in checked._by_node.items():
            kept = grown.get(node_id, ())
            grown[node_id] = kept + (group[1:] if kept and kept[-1] is group[0] else group)
        folded = object.__new__(ExecutionHistory)
        object.__setattr__(folded, "records", self.records + added)
        object.__setattr__(folded, "_by_node", grown)
        folds: Folds = {}
        for start, (value, more) in list(self._folds.items()):
            after = more(value, added)
            if after is not None:  # else `folded` computes it afresh when asked
                folds[start] = (after, more)
        object.__setattr__(folded, "_folds", folds)
        touched = checked._by_node.keys()
        node_folds = {
            compute: {node_id: value for node_id, value in kept.items() if node_id not in touched}
            for compute, kept in list(self._node_folds.items())
        }
        object.__setattr__(folded, "_node_folds", node_folds)
        return folded

    def folded(
        self,
        start: Callable[[tuple[ExecutionRecord, ...]], T],
        more: Callable[[T, tuple[ExecutionRecord, ...]], T | None],
    ) -> T:
        """`start(self.records)`, computed once per history. A history `extended` from this one
        by records `added` holds `more(value, added)` instead, which must be what `start` gives
        on all its records (None: it cannot tell, and `start` runs there afresh)."""
        found = self._folds.get(start)
        if found is None:
            found = (start(self.records), more)
            self._folds[start] = found
        return cast(T, found[0])

    def node_folded(
        self, compute: Callable[[str, tuple[ExecutionRecord, ...]], T], node_id: str
    ) -> T:
        """`compute(node_id, self.records_for(node_id))`, computed once per history and node; a
        history `extended` from this one keeps it for each node it added no record of."""
        kept = self._node_folds.setdefault(compute, {})
        if node_id not in kept:
            kept[node_id] = compute(node_id, self.records_for(node_id))
        return cast(T, kept[node_id])

    def __len__(self) -> int:
        return len(self.records)

    def run_ids(self) -> tuple[str, ...]:
        """Every run the history holds, sorted."""
        return tuple(sorted({record.run_id for record in self.records}))

    def node_ids(self) -> tuple[str, ...]:
        """Every node with at least one execution, sorted."""
        return tuple(sorted(self._by_node))

    def records_for(self, node_id: str) -> tuple[ExecutionRecord, ...]:
        return self._by_node.get(node_id, ())

    def execution_count(self, node_id: str) -> int:
        return len(self.records_for(node_id))

    def last_record(self, node_id: str) -> ExecutionRecord | None:
        """The node's latest execution, None if it never ran."""
        records = self.records_for(node_id)
        return records[-1] if records else None

    def summary(self) -> HistorySummary:
        return summarize(self)


# ---------------------------------------------------------------- the summary


@attrs.frozen(slots=True)
class MergeReruns:
    """What the iterations run again after a merge cost (README, Running leaves in parallel):
    agent time, tokens and spend no sequential run would have paid."""

    count: int
    duration_ms: int
    tokens: TokenUsage
    cost_usd: float | None


NO_MERGE_RERUNS = MergeReruns(0, 0, TokenUsage(), None)


@attrs.frozen(slots=True)
class HistorySummary:
    """The execution summary's figures, then what the runner's iterations add to them."""

    total_executions: int
    successful_executions: int
    failed_executions: int
    success_rate: float
    total_duration: float
    total_tokens: TokenUsage
    nodes_executed: int
    execution_order: tuple[str, ...]
    attempts_consumed: int
    runner_errors: int
    agent_errors: int
    guard_passes: int
    guard_failures: int
    total_cost_usd: float | None
    # `runner report --json` has them apart, and only in a run that had one.
    merge_reruns: MergeReruns = attrs.field(default=NO_MERGE_RERUNS, metadata=shaped(skip=True))


def merge_reruns(records: Iterable[ExecutionRecord]) -> MergeReruns:
    """The merge reruns among `records`, summed: the one home of both the per-node and the
    run's figures, so the nodes' add up to the run's."""
    reruns = [record for record in records if record.merge_rerun]
    costs = [record.cost_usd for record in reruns if record.cost_usd is not None]
    return MergeReruns(
        count=len(reruns),
        duration_ms=sum(record.duration_ms for record in reruns),
        tokens=sum_tokens(reruns),
        cost_usd=math.fsum(costs) if costs else None,
    )


def summarize(history: ExecutionHistory) -> HistorySummary:
    """What a history amounts to: executions, successes, time, tokens, cost and attempts;
    `history_summary_to_json` is its JSON form."""
    tally = history.folded(Tally.of, Tally.plus)
    total, successful, costs = tally.executions, tally.successful, tally.costs
    return HistorySummary(
        total_executions=total,
        successful_executions=successful,
        failed_executions=total - successful,
        success_rate=successful / total if total else 0.0,
        # Summing integers first keeps the total exact and independent of record order.
        total_duration=tally.duration_ms / 1000,
        total_tokens=TokenUsage(*tally.tokens),
        nodes_executed=len(history.node_ids()),
        execution_order=tally.execution_order,
        attempts_consumed=tally.attempts_consumed,
        runner_errors=tally.runner_errors,
        agent_errors=tally.agent_errors,
        guard_passes=tally.guard_passes,
        guard_failures=tally.guard_failures,
        # fsum is exactly rounded, so the total does not depend on the order of the costs.
        total_cost_usd=math.fsum(costs) if costs else None,
        merge_reruns=merge_reruns(tally.reruns),
    )


def history_summary_to_json(summary: HistorySummary) -> dict[str, Any]:
    """The summary as JSON: the execution summary's keys first, then the runner's."""
    return dict(json_form(summary))


# ---------------------------------------------------------------- per node


@attrs.frozen(slots=True)
class NodeStats:
    node_id: str
    executions: int
    successful_executions: int
    failed_executions: int
    attempts_consumed: int
    total_duration_ms: int
    tokens: TokenUsage
    last_iteration: int
    last_status: AgentStatus
    last_guard: GuardOutcome
    merge_reruns: MergeReruns = NO_MERGE_RERUNS


def _stats_of(node_id: str, records: tuple[ExecutionRecord, ...]) -> NodeStats:
    successful = sum(1 for record in records if record.successful)
    last = records[-1]
    return NodeStats(
        node_id=node_id,
        executions=len(records),
        successful_executions=successful,
        failed_executions=len(records) - successful,
        attempts_consumed=sum(1 for record in records if record.consumed_attempt),
        total_duration_ms=sum(record.duration_ms for record in records),
        tokens=sum_tokens(records),
        last_iteration=last.iteration,
        last_status=last.status,
        last_guard=last.guard,
        merge_reruns=merge_reruns(records),
    )


def node_stats(history: ExecutionHistory) -> tuple[NodeStats, ...]:
    """One row per executed node, sorted by node id."""
    return tuple(history.node_folded(_stats_of, node_id) for node_id in history.node_ids())


def _check_limit(n: int) -> None:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")


def slowest(history: ExecutionHistory, n: int) -> tuple[ExecutionRecord, ...]:
    """The `n` longest executions: duration descending, ties in history order."""
    _check_limit(n)
    # `sorted(...)[:n]` without sorting every record of a long run.
    ranked = heapq.nsmallest(
        n, history.records, key=lambda record: (-record.duration_ms, *_history_key(record))
    )
    return tuple(ranked)


def most_retried(
    history: ExecutionHistory, n: int, stats: Iterable[NodeStats] | None = None
) -> tuple[NodeStats, ...]:
    """The `n` nodes that consumed the most attempts (ties by node id); none with zero.

    `stats`, when given, is `node_stats(history)` already computed (the report's, once)."""
    _check_limit(n)
    rows = node_stats(history) if stats is None else stats
    retried = [row for row in rows if row.attempts_consumed > 0]
    retried.sort(key=lambda stats: (-stats.attempts_consumed, stats.node_id))
    return tuple(retried[:n])


# ---------------------------------------------------------------- display state


class NodeDisplayState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    STUCK = "stuck"
    SKIPPED = "skipped"


PENDING, RUNNING, COMPLETED = (
    NodeDisplayState.PENDING,
    NodeDisplayState.RUNNING,
    NodeDisplayState.COMPLETED,
)
FAILED, STUCK, SKIPPED = (
    NodeDisplayState.FAILED,
    NodeDisplayState.STUCK,
    NodeDisplayState.SKIPPED,
)


def leaf_display_state(
    node_id: str,
    passes: bool,
    attempts: int,
    max_attempts: int,
    history: ExecutionHistory,
    running: Container[str],
) -> NodeDisplayState:
    """A leaf's display state (`display_states`), from its fields and the running nodes."""
    if node_id in running:
        return RUNNING
    if passes:
        return COMPLETED
    if attempts_used(passes, attempts, max_attempts):
        return STUCK
    last = history.last_record(node_id)
    if last is None or last.successful:
        return PENDING
    return FAILED


def parent_display_state(
    node_id: str, passes: bool, children: list[NodeDisplayState], running: Container[str]
) -> NodeDisplayState:
    """A node's with children (`display_states`), from its children's states."""
    if node_id in running or RUNNING in children:
        return RUNNING
    if passes:
        return COMPLETED
    for urgent in (STUCK, FAILED):
        if urgent in children:
            return urgent
    return PENDING


def display_states(
    tree: Node, history: ExecutionHistory, running_node_id: str | None = None
) -> dict[str, NodeDisplayState]:
    """The display state of every node of `tree` and of every executed node it lost.

    A leaf, first rule that holds:
      running   — it is `running_node_id` (the iteration in progress, when there is one);
      completed — `passes` is true;
      stuck     — open with `attempts >= max_attempts`;
      failed    — open with attempts left, and its last execution was not successful;
      pending   — open and never executed, or its last execution succeeded yet it is open
                  again (a decomposed node whose children an agent removed).
    A node with children: running when it is `running_node_id` or a child is running;
    completed when `passes`; otherwise the most urgent of its children's states, stuck
    before failed; else pending. Its own executions (the decomposition) do not count.
    skipped   — executed in this history but no longer in the tree (an open node an agent
                removed or replaced); `running_node_id` still wins if it names such a node,
                and a running node absent from both is still reported running.
    Keys: the tree's nodes in pre-order, then the others sorted by id.
    """
    nodes: list[Node] = []
    in_tree: set[str] = set()
    for node, _ in iter_preorder(tree):
        if node.id not in in_tree:
            in_tree.add(node.id)
            nodes.append(node)
    states: dict[str, NodeDisplayState] = {}
    running = () if running_node_id is None else (running_node_id,)
    # Reversed pre-order reaches every child before its parent.
    for node in reversed(nodes):
        if node.is_leaf:
            states[node.id] = leaf_display_state(
                node.id, node.passes, node.attempts, node.max_attempts, history, running
            )
        else:
            children = [states[child.id] for child in node.children if child.id in states]
            states[node.id] = parent_display_state(node.id, node.passes, children, running)
    result = {node.id: states[node.id] for node in nodes}
    gone = set(history.node_ids()) - in_tree
    if running_node_id is not None and running_node_id not in in_tree:
        gone.add(running_node_id)
    for node_id in sorted(gone):
        result[node_id] = RUNNING if node_id == running_node_id else SKIPPED
    return result
