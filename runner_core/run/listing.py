"""The runs of a repository: how each stands, and where a command may start one.

Decides a run's state (open, complete, stuck, interrupted, running) from its latest tree and
whether an iteration of it was cut short, the `runner runs` rows, and the one-line refusals
that name the existing runs and the ways on (continue one, or `runner start --new`). Never
asks git or reads a file: the shell gathers each run's facts.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

import attrs

from runner_core.json_form import shaped
from runner_core.run.identity import PROTECTED_BRANCHES, branch_for, ways_on
from runner_core.tree.model import Node
from runner_core.tree.selection import SelectionStatus, leaf_counts, select_leaf


class RunCondition(enum.StrEnum):
    OPEN = "open"
    COMPLETE = "complete"
    STUCK = "stuck"
    INTERRUPTED = "interrupted"
    RUNNING = "running"
    UNKNOWN = "unknown"  # no readable tree


@attrs.frozen(slots=True)
class RunFacts:
    """What the shell found about one run."""

    run_id: str
    has_branch: bool
    tree: Node | None
    next_iteration: int | None
    last_activity: str | None  # ISO 8601, the latest commit or iteration
    journal_alive: bool | None = None  # None: no journal names this run


class LeafCount(NamedTuple):
    passed: int
    total: int


@attrs.frozen(slots=True)
class RunRow:
    """One run of `runner runs`, its fields the keys of its entry in `--json`."""

    run_id: str = attrs.field(metadata=shaped(key="id"))
    branch: str | None
    state: RunCondition
    next_iteration: int | None = attrs.field(metadata=shaped(key="next_iter"))
    leaves: LeafCount
    last_activity: str | None


@attrs.frozen(slots=True)
class RunsDocument:
    """`runner runs --json` (schemas/views/runs.schema.json); `runner serve` sends it too."""

    runs: tuple[RunRow, ...]


_BY_SELECTION: Mapping[SelectionStatus, RunCondition] = MappingProxyType(
    {
        SelectionStatus.OPEN: RunCondition.OPEN,
        SelectionStatus.COMPLETE: RunCondition.COMPLETE,
        SelectionStatus.STUCK: RunCondition.STUCK,
    }
)


def run_condition(tree: Node | None, journal_alive: bool | None) -> RunCondition:
    """A journal outranks the tree: its iteration is running, or was cut short."""
    if journal_alive is not None:
        return RunCondition.RUNNING if journal_alive else RunCondition.INTERRUPTED
    if tree is None:
        return RunCondition.UNKNOWN
    return _BY_SELECTION[select_leaf(tree).status]


def run_row(facts: RunFacts) -> RunRow:
    passed, total = leaf_counts(facts.tree) if facts.tree is not None else (0, 0)
    return RunRow(
        run_id=facts.run_id,
        branch=branch_for(facts.run_id) if facts.has_branch else None,
        state=run_condition(facts.tree, facts.journal_alive),
        next_iteration=facts.next_iteration,
        leaves=LeafCount(passed, total),
        last_activity=facts.last_activity,
    )


def run_rows(facts: Sequence[RunFacts]) -> tuple[RunRow, ...]:
    """One row per run, oldest activity first (runs without any last)."""
    rows = [run_row(item) for item in facts]
    return tuple(sorted(rows, key=lambda row: (row.last_activity or "~", row.run_id)))


def run_line(row: RunRow) -> str:
    return (
        f"run: id={row.run_id} branch={row.branch or '-'} state={row.state.value} "
        f"next_iter={row.next_iteration if row.next_iteration is not None else '-'} "
        f"leaves={row.leaves.passed}/{row.leaves.total} "
        f"last_activity={row.last_activity or '-'}"
    )


def start_on_protected_problem(branch: str | None, run_ids: Sequence[str], new: bool) -> str | None:
    """Why `runner start` on main/master must not pick a run itself, or None."""
    if new or branch not in PROTECTED_BRANCHES or not run_ids:
        return None
    return f"refusing to start on branch '{branch}': {ways_on(tuple(run_ids))}"
