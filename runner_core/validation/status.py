"""Layer 4 of validation: the agent's status must match what it did to the tree.

Decides whether the selected node gained children exactly when the status says it decomposed.
Compares child counts only; what the children are is the other validators' business.
"""

from __future__ import annotations

from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.tree.model import AgentStatus, AgentStatusValue, Node, nodes_by_id
from runner_core.validation.finding import Finding

# For each status: must the selected node gain children?
GAINS_CHILDREN: PMap[AgentStatus, bool] = pmap(
    {
        AgentStatus.DECOMPOSED: True,
        AgentStatus.DONE: False,
        AgentStatus.RETRY: False,
    }
)


def status_findings(
    prev: Node, next_tree: Node, selected_id: str, status: AgentStatus | AgentStatusValue
) -> tuple[Finding, ...]:
    """The status violation for the selected node, if any; `status` is an `AgentStatus` or
    its string value."""
    status = AgentStatus(status)
    before = nodes_by_id(prev).get(selected_id)
    after = nodes_by_id(next_tree).get(selected_id)
    said = f"status={status.value} but selected node '{selected_id}'"
    if after is None:
        return (_found(selected_id, "selected_missing", f"{said} missing in next tree"),)
    p = len(before.children) if before is not None else 0
    n = len(after.children)
    gained = n > p
    counts = f"(prev={p}, next={n})"
    if GAINS_CHILDREN[status] and not gained:
        return (
            _found(selected_id, "no_children_gained", f"{said} did not gain children {counts}"),
        )
    if gained and not GAINS_CHILDREN[status]:
        return (_found(selected_id, "children_gained", f"{said} gained children {counts}"),)
    return ()


def _found(node_id: str, code: str, message: str) -> Finding:
    return Finding("status", node_id, None, code, message)
