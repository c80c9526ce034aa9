"""Layer 4 of validation: the agent's status must match what it did to the tree (SPEC §4.4).

Decides whether the selected node gained children exactly when the status says it decomposed.
Compares child counts only; what the children are is the other validators' business.
"""

from __future__ import annotations

from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.tree.model import AgentStatus, Node, nodes_by_id

# For each status: must the selected node gain children?
GAINS_CHILDREN: PMap[AgentStatus, bool] = pmap(
    {
        AgentStatus.DECOMPOSED: True,
        AgentStatus.DONE: False,
        AgentStatus.RETRY: False,
    }
)


def validate_status_invariants(
    prev: Node, next_tree: Node, selected_id: str, status: AgentStatus | str
) -> tuple[str, ...]:
    """The status violation for the selected node, if any, as a sorted tuple; `status` is an
    `AgentStatus` or its string value."""
    status = AgentStatus(status)
    before = nodes_by_id(prev).get(selected_id)
    after = nodes_by_id(next_tree).get(selected_id)
    if after is None:
        return (f"status={status.value} but selected node '{selected_id}' missing in next tree",)
    p = len(before.children) if before is not None else 0
    n = len(after.children)
    gained = n > p
    if GAINS_CHILDREN[status] and not gained:
        return (
            f"status={status.value} but selected node '{selected_id}' did not gain children "
            f"(prev={p}, next={n})",
        )
    if gained and not GAINS_CHILDREN[status]:
        return (
            f"status={status.value} but selected node '{selected_id}' gained children "
            f"(prev={p}, next={n})",
        )
    return ()
