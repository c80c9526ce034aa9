"""Runner-owned state: how `passes` and `attempts` change after an iteration.

Decides the next tree's `passes`/`attempts` from the previous tree alone plus the iteration's
status and guard outcome, and keeps an existing node's `max_attempts` as it was (the runner,
not the agent, decides when a node is stuck); whatever the agent wrote into them is ignored.
The table below is the spec's table; the functions after it only apply it.
"""

from __future__ import annotations

from typing import Any

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.tree.model import (
    AgentStatus,
    AgentStatusValue,
    GuardOutcome,
    GuardOutcomeValue,
    Node,
    in_canonical_order,
    nodes_by_id,
    rebuild_postorder,
    same_objects,
)

# Its home is the model (a decomposition raises it too); importable from here as before.
from runner_core.tree.model import UnknownSelectedNode as UnknownSelectedNode


@attrs.frozen(slots=True)
class Transition:
    sets_passes: bool
    increments_attempts: bool


DONE, RETRY, DECOMPOSED = AgentStatus.DONE, AgentStatus.RETRY, AgentStatus.DECOMPOSED
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED

TRANSITIONS: PMap[tuple[AgentStatus, GuardOutcome], Transition] = pmap(
    {
        (DONE, PASS): Transition(sets_passes=True, increments_attempts=False),
        (DONE, FAIL): Transition(sets_passes=False, increments_attempts=True),
        (DONE, SKIPPED): Transition(sets_passes=False, increments_attempts=False),
        (RETRY, SKIPPED): Transition(sets_passes=False, increments_attempts=True),
        (DECOMPOSED, SKIPPED): Transition(sets_passes=False, increments_attempts=False),
    }
)


class InvalidTransition(ValueError):
    """A status/guard pair the spec has no row for (guards run only for `done`)."""


@attrs.frozen(slots=True)
class RevertedField:
    """A runner-owned field the agent wrote and the runner put back before applying the table.

    `old` is the value the runner kept (the previous tree's, or `passes=false`/`attempts=0`
    for a node new in the agent's tree); `new` is the value the agent wrote, discarded.
    """

    node_id: str
    field: str
    old: bool | int
    new: bool | int


@attrs.frozen(slots=True)
class StateUpdateSummary:
    """What `apply_state_updates` did: the row it applied, the nodes whose `passes` or
    `attempts` it changed, and every runner-owned field of the agent's tree it reverted.

    Node ids are sorted; `reverted` is sorted by node id, then field name.
    `state_update_summary_to_json` is its canonical JSON form.
    """

    status: AgentStatus
    guard: GuardOutcome
    passes_set: tuple[str, ...] = ()
    attempts_incremented: tuple[str, ...] = ()
    derived_passes_set: tuple[str, ...] = ()
    reverted: tuple[RevertedField, ...] = ()


def state_update_summary_to_json(summary: StateUpdateSummary) -> dict[str, Any]:
    """The summary as plain JSON data, keys and lists in a fixed order: same summary, same
    bytes from `json.dumps`."""
    return {
        "status": summary.status.value,
        "guard": summary.guard.value,
        "passes_set": list(summary.passes_set),
        "attempts_incremented": list(summary.attempts_incremented),
        "derived_passes_set": list(summary.derived_passes_set),
        "reverted": [
            {"node": field.node_id, "field": field.field, "old": field.old, "new": field.new}
            for field in summary.reverted
        ],
    }


def _reverted(node: Node, passes: bool, attempts: int, max_attempts: int) -> list[RevertedField]:
    kept = (("attempts", attempts), ("max_attempts", max_attempts), ("passes", passes))
    return [
        RevertedField(node.id, name, value, getattr(node, name))
        for name, value in kept
        if getattr(node, name) != value
    ]


def apply_state_updates(
    prev: Node,
    next_tree: Node,
    selected_id: str,
    status: AgentStatus | AgentStatusValue,
    guard: GuardOutcome | GuardOutcomeValue,
) -> tuple[Node, StateUpdateSummary]:
    """The agent's tree with `passes`, `attempts`, `max_attempts` reset from `prev`, the row of
    `(status, guard)` (enums or their values) applied to the selected node, parents' `passes`
    derived and siblings sorted; with a summary. Raises `InvalidTransition` for a pair with no
    row, `UnknownSelectedNode` when `selected_id` is not in `next_tree`, `ValueError` when
    `status` or `guard` is no value of its enum."""
    status, guard = AgentStatus(status), GuardOutcome(guard)
    transition = _row(status, guard)
    owned = nodes_by_id(prev)
    ids: tuple[list[str], list[str], list[str]] = ([], [], [])
    passes_set, attempts_incremented, derived = ids
    reverted: list[RevertedField] = []
    found_selected = False

    def update(node: Node, children: tuple[Node, ...]) -> Node:
        nonlocal found_selected
        if len(children) > 1:
            children = in_canonical_order(children)  # step 4, sorting as the tree is rebuilt
        before = owned.get(node.id)
        passes, attempts = (False, 0) if before is None else (before.passes, before.attempts)
        max_attempts = node.max_attempts if before is None else before.max_attempts
        agent_wrote = passes is not node.passes or attempts != node.attempts
        if agent_wrote or max_attempts != node.max_attempts:
            reverted.extend(_reverted(node, passes, attempts, max_attempts))
        if node.id == selected_id and not found_selected:
            found_selected = True
            if transition.sets_passes and not passes:
                passes = True
                passes_set.append(node.id)
            if transition.increments_attempts and attempts < max_attempts:
                attempts += 1
                attempts_incremented.append(node.id)
        if children:
            all_pass = all(child.passes for child in children)
            if all_pass and not passes:
                derived.append(node.id)
            passes = all_pass
        if (
            passes is node.passes
            and attempts == node.attempts
            and max_attempts == node.max_attempts
            and same_objects(children, node.children)
        ):
            # Unchanged: share it, so an iteration allocates only along the paths it changed.
            return node
        return attrs.evolve(
            node, passes=passes, attempts=attempts, max_attempts=max_attempts, children=children
        )

    updated = rebuild_postorder(next_tree, update)
    if not found_selected:
        raise UnknownSelectedNode(f"selected node '{selected_id}' is not in the tree")
    return updated, _summary(status, guard, ids, reverted)


def _row(status: AgentStatus, guard: GuardOutcome) -> Transition:
    transition = TRANSITIONS.get((status, guard))
    if transition is None:
        raise InvalidTransition(f"no transition for status={status.value} guard={guard.value}")
    return transition


def _summary(
    status: AgentStatus,
    guard: GuardOutcome,
    ids: tuple[list[str], list[str], list[str]],
    reverted: list[RevertedField],
) -> StateUpdateSummary:
    passes_set, attempts_incremented, derived = (tuple(sorted(found)) for found in ids)
    return StateUpdateSummary(
        status,
        guard,
        passes_set,
        attempts_incremented,
        derived,
        tuple(sorted(reverted, key=lambda field: (field.node_id, field.field))),
    )
