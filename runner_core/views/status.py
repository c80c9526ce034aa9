"""What `runner status` shows: where the run stands, as a view, its `--json` document and its
lines.

Decides the status view (selected and stuck leaves, the tree with each node's display state,
the iteration running or interrupted, the operator's side, the budgets), the content and key
order of `runner status --json` and every `status:` line. Never reads a file or the clock: the
shell gathers the tree, run state, journal, history and operator facts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from runner_core.history.records import ExecutionHistory, NodeDisplayState
from runner_core.iteration.recovery import Journal
from runner_core.json_form import json_form
from runner_core.run.config import NO_BUDGET, BudgetConfig
from runner_core.run.identity import branch_for
from runner_core.run.operator_actions import OperatorAction, action_text
from runner_core.run.questions import open_questions
from runner_core.run.state import RunState
from runner_core.tree.model import AgentStatus, Node
from runner_core.tree.plain import PlainNode
from runner_core.tree.selection import SelectionStatus
from runner_core.views.history import record_status
from runner_core.views.running import RunningJob as RunningJob
from runner_core.views.running import running_jobs as running_jobs
from runner_core.views.running import running_node_id as running_node_id
from runner_core.views.status_tree import LeafRef as LeafRef
from runner_core.views.status_tree import TreeReading, node_tree_reading, plain_tree_reading
from runner_core.views.status_tree import TreeRow as TreeRow
from runner_core.views.steering import question_lines
from runner_core.views.suite import (
    SuiteView,
    TargetNotes,
    suite_view,
    target_note_lines,
)
from runner_core.views.text import flatten

# The budgets' arithmetic (exact sums of costs) is imported only for a run that sets one.
if TYPE_CHECKING:
    from runner_core.loop.budget import BudgetUse

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
    # agents' open questions (whenever there are any) and the operator commits.
    interrupted: Journal | None = None
    guidance: str | None = None
    questions: str | None = None
    operator_actions: tuple[OperatorAction, ...] = ()
    # Each configured budget, spent vs limit, in budget_uses' order.
    budgets: tuple[BudgetUse, ...] = ()
    # The sandbox the agent and guard get here ("bwrap" | "off"); None when nobody asked.
    sandbox: str | None = None
    # Each layer of it and what holds it (`userns=yes`, ...), in validate's order; () unasked.
    sandbox_layers: tuple[tuple[str, str], ...] = ()
    # The guard's test figures over the run, once a guard has written a report.
    tests: SuiteView | None = None
    # Every iteration in flight of a parallel run, by iteration; None when no parallel job
    # has a journal (a one-slot run), and then `running`/`interrupted` say it all.
    jobs: tuple[RunningJob, ...] | None = None
    # A ratchet run's open leaves: patterns no test matches yet, leaves naming no test.
    targets: TargetNotes | None = None
    # The last iteration's word as every view shows it (runner_error, conflict, ...), when the
    # history holds it; run_state.json keeps only the agent's status (`retry`).
    last_shown: str | None = None

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
    # The journals parallel jobs left, each with whether its runner is alive.
    jobs: tuple[RunningJob, ...] = ()


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
    return _status_view(
        lambda running: node_tree_reading(tree, history, running),
        state,
        max_iterations,
        history,
        journal,
        operator,
        budget,
    )


def plain_status_view(
    root: PlainNode,
    state: RunState,
    max_iterations: int,
    history: ExecutionHistory,
    journal: Journal | None = None,
    operator: OperatorFacts = OperatorFacts(),
    budget: BudgetConfig = NO_BUDGET,
) -> StatusView:
    """`status_view` of the tree `runner_core.tree.plain.read_plain_root` read, equal to the
    view of the same tree parsed, built without its `Node`s."""
    return _status_view(
        lambda running: plain_tree_reading(root, history, running),
        state,
        max_iterations,
        history,
        journal,
        operator,
        budget,
    )


def _status_view(
    read_tree: Callable[[tuple[str, ...]], TreeReading],
    state: RunState,
    max_iterations: int,
    history: ExecutionHistory,
    journal: Journal | None,
    operator: OperatorFacts,
    budget: BudgetConfig,
) -> StatusView:
    live, cut, jobs = _in_flight(state, journal, operator)
    running_ids: tuple[str, ...]
    if jobs is None:
        running_ids = () if live is None else (live.node_id,)
    else:
        running_ids = tuple(job.journal.node_id for job in jobs if job.alive)
    tree = read_tree(running_ids)
    in_tree = {row.id for row in tree.rows}
    removed = tuple(
        (node_id, history.execution_count(node_id), display)
        for node_id, display in tree.states.items()
        if node_id not in in_tree
    )
    passed, total = tree.leaves
    return StatusView(
        run_id=state.run_id,
        next_iteration=state.next_iter,
        max_iterations=max_iterations,
        leaves_passed=passed,
        leaves_total=total,
        selection=tree.selection,
        selected=tree.selected,
        stuck=tree.stuck,
        state=state,
        running=live,
        tree=tree.rows,
        removed=removed,
        interrupted=cut,
        guidance=operator.guidance,
        questions=open_questions(operator.questions, operator.guidance),
        operator_actions=operator.actions,
        budgets=_budgets(budget, history),
        tests=suite_view(history.records),
        jobs=jobs,
        last_shown=_last_shown(history, state),
    )


def _budgets(budget: BudgetConfig, history: ExecutionHistory) -> tuple[BudgetUse, ...]:
    """`budget_uses`: none when no budget is set (every limit None), as it would say."""
    if budget == NO_BUDGET:
        return ()
    from runner_core.loop.budget import budget_uses

    return budget_uses(budget, history.summary())


def _value(status: AgentStatus | None) -> str | None:
    return None if status is None else status.value


def _last_shown(history: ExecutionHistory, state: RunState) -> str | None:
    records = history.records
    if not records or records[-1].iteration != state.next_iter - 1:
        return None
    return record_status(records[-1])


def _in_flight(
    state: RunState, journal: Journal | None, operator: OperatorFacts
) -> tuple[Journal | None, Journal | None, tuple[RunningJob, ...] | None]:
    """The iteration running, the one interrupted and, in a parallel run, every job in flight.

    With jobs, `running` is the oldest live one and `interrupted` the oldest whose runner died:
    the iteration a one-slot reader of those fields would see.
    """
    named = journal if running_node_id(journal, state.run_id) is not None else None
    live = named if operator.journal_alive else None
    cut = named if live is None else None
    of_jobs = running_jobs(state.run_id, state.next_iter, None, operator.jobs)
    if not of_jobs:
        return live, cut, None
    run_job = None if named is None else RunningJob(named, operator.journal_alive)
    jobs = running_jobs(state.run_id, state.next_iter, run_job, of_jobs)
    live = next((job.journal for job in jobs if job.alive), None)
    cut = next((job.journal for job in jobs if not job.alive), None)
    return live, cut, jobs


_RUNNING_KEYS = ("iteration", "node_id", "role", "phase", "started_at")


def _running_json(journal: Journal) -> dict[str, Any]:
    return {key: json_form(getattr(journal, key)) for key in _RUNNING_KEYS}


def _job_json(job: RunningJob) -> dict[str, Any]:
    return {**_running_json(job.journal), "alive": job.alive, "worker": job.worker}


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
    ref = json_form(view.selected) or dict.fromkeys(("id", "path", "attempts", "max_attempts"))
    selected.update(ref)
    state = view.state
    document = {
        "run": "not-started" if view.run_id is None else "started",
        "run_id": view.run_id,
        "branch": view.branch,
        "next_iteration": view.next_iteration,
        "max_iterations": view.max_iterations,
        "leaves": {"passed": view.leaves_passed, "total": view.leaves_total},
        "selected": selected,
        "stuck": json_form(view.stuck),
        "last": {
            "status": json_form(state.last_status),
            "guard": json_form(state.last_guard),
            "summary": state.last_summary,
        },
        # The word every view shows for it: run_state keeps only `retry`.
        "last_shown_status": view.last_shown or _value(state.last_status),
        "running": None if view.running is None else _running_json(view.running),
        "tree": [_tree_row_json(row) for row in view.tree],
        "removed": [
            {"id": node_id, "executions": executions, "state": display.value}
            for node_id, executions, display in view.removed
        ],
        "interrupted": None if view.interrupted is None else _running_json(view.interrupted),
        "guidance": view.guidance,
        "questions": view.questions,
        "operator_actions": json_form(view.operator_actions),
        "budgets": json_form(view.budgets),
        "sandbox": view.sandbox,
        "sandbox_layers": dict(view.sandbox_layers) if view.sandbox_layers else None,
        "tests": json_form(view.tests),
    }
    if view.targets is not None:  # a ratchet run's: which open leaves' tests do not exist yet
        document["test_targets"] = json_form(view.targets)
    if view.jobs is not None:  # a one-slot run's document keeps its keys
        document["jobs"] = [_job_json(job) for job in view.jobs]
    return document


# ---------------------------------------------------------------- the lines


def _activity_lines(view: StatusView) -> list[str]:
    """The sandbox, the last guard's tests, and the iteration running or cut short."""
    lines = []
    if view.sandbox is not None:
        layers = "".join(f" {name}={value}" for name, value in view.sandbox_layers)
        lines.append(f"status: sandbox={view.sandbox}{layers}")
    if view.tests is not None:
        flaky = len(view.tests.flaky)
        lines.append(f"status: last {view.tests.last.line()} flaky_tests={flaky}")
    if view.targets is not None:
        lines.extend(target_note_lines(view.targets))
    if view.jobs is None:
        shown = [RunningJob(journal, True) for journal in (view.running,) if journal is not None]
        cut = view.interrupted
        shown.extend(RunningJob(journal, False) for journal in (cut,) if journal is not None)
    else:
        shown = list(view.jobs)
    lines.extend(_job_line(job) for job in shown)
    return lines


def _job_line(job: RunningJob) -> str:
    """An iteration in flight, with its worker when it runs on one; one whose runner died
    waits for `runner recover`."""
    journal = job.journal
    if job.alive:
        worker = "" if job.worker is None else f" worker={flatten(job.worker, 80)}"
        return (
            f"status: running iter={journal.iteration} node={journal.node_id} "
            f"phase={journal.phase.value} started_at={journal.started_at}{worker}"
        )
    return (
        f"status: interrupted iter={journal.iteration} node={journal.node_id} "
        f"phase={journal.phase.value} started_at={journal.started_at} "
        "(its runner is gone; run 'runner recover')"
    )


# Node lines `runner status` prints without `--tree`: the selected, running and stuck nodes.
SUMMARY_NODE_LINES = 20
TREE_HINT = "runner status --tree"


def _row_line(row: TreeRow, indent: str) -> str:
    return (
        f"  {indent}{row.id}  {row.state.value}  "
        f"attempts={row.attempts}/{row.max_attempts}  {flatten(row.title, 80)}"
    )


def tree_summary_lines(view: StatusView, limit: int = SUMMARY_NODE_LINES) -> list[str]:
    """The tree in a bounded number of lines: the node count, the count of each display state
    (every state, in NodeDisplayState's order), then the selected, running and stuck nodes in
    canonical order, at most `limit` of them, and how to see the rest."""
    counts = dict.fromkeys(NodeDisplayState, 0)
    shown: list[TreeRow] = []
    more = 0
    selected = None if view.selected is None else view.selected.id
    for row in view.tree:
        counts[row.state] += 1
        if row.id == selected or row.state in (NodeDisplayState.RUNNING, NodeDisplayState.STUCK):
            if len(shown) < limit:
                shown.append(row)
            else:
                more += 1
    states = " ".join(f"{state.value}={count}" for state, count in counts.items())
    removed = f" removed={len(view.removed)}" if view.removed else ""
    out = [f"tree: nodes={len(view.tree)} {states}{removed} (every node: {TREE_HINT})"]
    out.extend(_row_line(row, "") for row in shown)
    if more:
        out.append(f"  ... {more} more selected, running or stuck nodes ({TREE_HINT})")
    return out


def render_status(view: StatusView, *, tree: bool = False) -> list[str]:
    """`runner status`'s lines: the run, then the tree summarized (`tree_summary_lines`), or
    with `tree` every node of it and every node it lost."""
    out = []
    if view.run_id is None:
        out.append("status: run=not-started")
    else:
        out.append(f"status: run={view.run_id} branch={view.branch}")
    out.append(f"status: next_iter={view.next_iteration} max_iterations={view.max_iterations}")
    out.append(f"status: leaves passed={view.leaves_passed} total={view.leaves_total}")
    selected = view.selected
    if selected is None:
        out.append(f"status: selected={view.selection.value}")
    else:
        out.append(
            f"status: selected={view.selection.value} id={selected.id} path={selected.path} "
            f"attempts={selected.attempts}/{selected.max_attempts}"
        )
    if not view.stuck:
        out.append("status: stuck=none")
    stuck = view.stuck if tree else view.stuck[:SUMMARY_NODE_LINES]
    for leaf in stuck:
        out.append(
            f"status: stuck id={leaf.id} path={leaf.path} "
            f"attempts={leaf.attempts}/{leaf.max_attempts}"
        )
    if len(stuck) < len(view.stuck):
        out.append(f"status: stuck +{len(view.stuck) - len(stuck)} more ({TREE_HINT})")
    state = view.state
    if state.last_status is None:
        out.append("status: last=none")
    else:
        guard = state.last_guard.value if state.last_guard is not None else "-"
        shown = view.last_shown or state.last_status.value
        out.append(f"status: last status={shown} guard={guard}")
    if state.last_summary:
        out.append(f"status: last_summary={flatten(state.last_summary, 100)}")
    out.extend(_activity_lines(view))
    out.extend(f"status: operator {action_text(action)}" for action in view.operator_actions)
    if view.guidance is not None:
        out.append("guidance:")
        out.extend(f"  {line}" for line in view.guidance.rstrip().splitlines())
    out.extend(question_lines(view.questions))
    if not tree:
        out.extend(tree_summary_lines(view))
        return out
    out.append("tree:")
    out.extend(_row_line(row, "  " * row.depth) for row in view.tree)
    for node_id, executions, display in view.removed:
        out.append(f"removed: {node_id}  {display.value}  executions={executions}")
    return out
