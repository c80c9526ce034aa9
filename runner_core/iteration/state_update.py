"""Runner-owned state: how `passes` and `attempts` change after an iteration (seed 000).

Decides the next tree's `passes`/`attempts` from the previous tree alone plus the iteration's
status and guard outcome, and keeps an existing node's `max_attempts` as it was (the runner,
not the agent, decides when a node is stuck); whatever the agent wrote into them is ignored.
The table below is the spec's table; the functions after it only apply it.
"""

from __future__ import annotations

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.tree.model import (
    AgentStatus,
    GuardOutcome,
    Node,
    in_canonical_order,
    nodes_by_id,
    rebuild_postorder,
    same_objects,
)


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


class UnknownSelectedNode(ValueError):
    """The selected node is not in the tree the update was asked to apply to."""


@attrs.frozen(slots=True)
class StateUpdateSummary:
    status: AgentStatus
    guard: GuardOutcome
    passes_set: tuple[str, ...] = ()
    attempts_incremented: tuple[str, ...] = ()
    derived_passes_set: tuple[str, ...] = ()


def apply_state_updates(
    prev: Node, next_tree: Node, selected_id: str, status: AgentStatus, guard: GuardOutcome
) -> tuple[Node, StateUpdateSummary]:
    """Reset runner-owned fields from `prev`, apply the table, derive passes, sort."""
    transition = TRANSITIONS.get((status, guard))
    if transition is None:
        raise InvalidTransition(f"no transition for status={status.value} guard={guard.value}")
    owned = nodes_by_id(prev)
    passes_set: list[str] = []
    attempts_incremented: list[str] = []
    derived: list[str] = []
    found_selected = False

    def update(node: Node, children: tuple[Node, ...]) -> Node:
        nonlocal found_selected
        if len(children) > 1:
            children = in_canonical_order(children)  # step 4, sorting as the tree is rebuilt
        before = owned.get(node.id)
        passes, attempts = (False, 0) if before is None else (before.passes, before.attempts)
        max_attempts = node.max_attempts if before is None else before.max_attempts
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
    summary = StateUpdateSummary(
        status=status,
        guard=guard,
        passes_set=tuple(sorted(passes_set)),
        attempts_incremented=tuple(sorted(attempts_incremented)),
        derived_passes_set=tuple(sorted(derived)),
    )
    return updated, summary
