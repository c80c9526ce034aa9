"""Whether an operator's commit did only what its command allows.

Decides, for a `runner node <op>` commit, which changes of the tree its op allows (the target's
own fields, fresh children under it, removing its subtree) and that the tree still holds its
invariants; for a `runner config` commit, that only its named key changed and the config still
reads. Never decides which commits are an operator's: commit_facts.py does.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runner_core.audit.commit_facts import CONFIG_PATH
from runner_core.audit.findings import Problem, change_text, finding_problems, named_problems
from runner_core.json_text import toml_value
from runner_core.run.config_change import only_key_changed
from runner_core.run.trailers import OperatorTrailers
from runner_core.tree.diff import ChangeKind, NodeChange, tree_diff
from runner_core.tree.model import Node, iter_preorder, nodes_by_id
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import invariant_findings


def _subtree_ids(tree: Node, node_id: str) -> frozenset[str]:
    found = nodes_by_id(tree).get(node_id)
    if found is None:
        return frozenset()
    return frozenset(node.id for node, _ in iter_preorder(found))


def _fresh(change: NodeChange, after: Node) -> bool:
    """A node the operator's plan created: open, no attempt used."""
    found = nodes_by_id(after).get(change.node_id)
    return found is not None and not found.passes and found.attempts == 0


# The target node's own fields each op may change (run/operations.py carries them out);
# children come and go only under the target, and only open, with no attempt used.
OP_OWN_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "retry": frozenset({"max_attempts"}),
        "decompose": frozenset({"next", "max_attempts"}),
        "replace": frozenset({"title", "goal", "acceptance", "next", "attempts"}),
        "skip": frozenset(),
        "add": frozenset(),
        "edit": frozenset({"title", "goal", "acceptance"}),
    }
)


def _op_allows(op: str, target: str, prev: Node, after: Node, change: NodeChange) -> bool:
    """Whether `runner node <op> <target>` may make this change."""
    fields = {field.field: field for field in change.fields}
    if change.node_id == target and change.kind is ChangeKind.CHANGED:
        within = not change.moved and set(fields) <= OP_OWN_FIELDS[op]
        if op == "retry":
            return within and fields["max_attempts"].new > fields["max_attempts"].old
        return within and (op != "replace" or _fresh(change, after))
    if change.kind is ChangeKind.REMOVED:
        return op in ("replace", "skip") and change.node_id in _subtree_ids(prev, target)
    if op == "add":  # one fresh child, right under the target
        added = change.kind is ChangeKind.ADDED and change.parent_after == target
        return added and _fresh(change, after)
    if op in ("decompose", "replace"):
        return change.node_id in _subtree_ids(after, target) and _fresh(change, after)
    # A skip may complete the ancestors of what it removed: their passes are derived.
    return op == "skip" and change.kind is ChangeKind.CHANGED and set(fields) == {"passes"}


def operator_problems(prev: Node, after: Node, action: OperatorTrailers) -> tuple[Problem, ...]:
    """Every change of an operator commit its op does not allow, and broken invariants."""
    target = nodes_by_id(prev).get(action.node_id)
    if target is None:
        return ((action.node_id, f"operator {action.op} names a node not in the tree"),)
    if target.passes:
        return ((action.node_id, f"operator {action.op} on a passed node"),)
    problems: list[Problem] = [
        (
            change.node_id,
            f"operator {action.op} on {action.node_id} may not make this change: "
            f"{change_text(change)}",
        )
        for change in tree_diff(prev, after).changes
        if not _op_allows(action.op, action.node_id, prev, after, change)
    ]
    if action.op == "skip" and action.node_id in nodes_by_id(after):
        problems.append((action.node_id, "operator skip left the node in the tree"))
    problems.extend(finding_problems(passed_node_findings(prev, after)))
    problems.extend(named_problems(messages(invariant_findings(after))))
    return tuple(problems)


def _toml(data: bytes | None) -> Mapping[str, Any] | None:
    try:
        return toml_value((data or b"").decode("utf-8"))
    except ValueError:  # not UTF-8, not TOML, or too deep
        return None


def config_problems(before: bytes | None, after: bytes | None, key: str) -> tuple[Problem, ...]:
    """A config commit may change its named key and nothing else, and must leave a valid config;
    a config that did not read before is a finding of its own, so only the result is checked."""
    old, new = _toml(before), _toml(after)
    if new is None:
        return (("", f"config commit for {key}: {CONFIG_PATH} is not valid TOML"),)
    if old is None or only_key_changed(old, new, key):
        return ()
    return (
        ("", f"config commit for {key} changed more than {key} (a hand edit of {CONFIG_PATH})"),
    )
