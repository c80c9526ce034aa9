"""The three-way merge of task trees: a finished job's tree onto the run branch's.

Nodes are matched by id. For each node, its parent and each own field (`DIFFED_FIELDS`: the
open fields an agent edits and the runner-owned `passes`, `attempts`, `max_attempts`) come from
whichever side changed them; a node added on one side joins, one removed on one side and left
alone on the other goes. A field changed differently on both sides, a node removed on one
side and changed on the other, or a parent that cannot hold (removed, or a cycle) is a
`TreeConflict`. The result is the tree as the runner writes it (`settle`). Never validates it
beyond that: the caller checks it as any tree.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from runner_core.tree.diff import DIFFED_FIELDS
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, index_by_id
from runner_core.tree.state_update import apply_state_updates

# A node's place and content: its parent's id, then its own fields in DIFFED_FIELDS' order.
MERGED_FIELDS: tuple[str, ...] = ("parent", *DIFFED_FIELDS)
_Entry = tuple[Any, ...]


class ConflictReason(enum.StrEnum):
    CHANGED_ON_BOTH = "changed differently on both sides"
    ADDED_ON_BOTH = "added differently on both sides"
    REMOVED_AND_CHANGED = "removed on one side and changed on the other"
    PARENT_REMOVED = "its parent is removed on the other side"
    CYCLE = "moved below itself by the two sides together"
    SECOND_ROOT = "a second root"


@attrs.frozen(slots=True)
class FieldConflict:
    """One field of one node that does not merge, and why."""

    node_id: str
    field: str
    reason: ConflictReason

    @property
    def text(self) -> str:
        return f"node '{self.node_id}' {self.field}: {self.reason.value}"


@attrs.frozen(slots=True)
class TreeConflict:
    """Why two trees do not merge: every conflicting field, sorted by node id then field."""

    conflicts: tuple[FieldConflict, ...]

    @property
    def line(self) -> str:
        """One line naming every conflict, for the job's runner error."""
        return "tree.json does not merge: " + "; ".join(item.text for item in self.conflicts)


def settle(tree: Node) -> Node:
    """`tree` as the runner writes it: each parent passes iff all its children pass, siblings
    in canonical order. The runner's own state update with the row that changes no node is the
    one home of both rules, so it is applied here rather than repeated."""
    settled, _ = apply_state_updates(
        tree, tree, tree.id, AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED
    )
    return settled


def _entries(tree: Node) -> dict[str, _Entry]:
    nodes, parents = index_by_id(tree)
    return {
        node_id: (parents[node_id], *(getattr(node, name) for name in DIFFED_FIELDS))
        for node_id, node in nodes.items()
    }


def _changed_fields(before: _Entry, after: _Entry) -> list[str]:
    return [name for name, old, new in zip(MERGED_FIELDS, before, after, strict=True) if old != new]


def _merge_entry(
    node_id: str, base: _Entry | None, ours: _Entry | None, theirs: _Entry | None
) -> tuple[_Entry | None, list[FieldConflict]]:
    """One node's merged place and content (None: not in the merged tree), or its conflicts."""
    if ours is None or theirs is None:
        kept = ours if theirs is None else theirs
        if kept is None or base is None:
            return kept, []
        changed = _changed_fields(base, kept)
        reason = ConflictReason.REMOVED_AND_CHANGED
        return None, [FieldConflict(node_id, name, reason) for name in changed]
    merged: list[Any] = []
    conflicts: list[FieldConflict] = []
    reason = ConflictReason.ADDED_ON_BOTH if base is None else ConflictReason.CHANGED_ON_BOTH
    for index, name in enumerate(MERGED_FIELDS):
        mine, other = ours[index], theirs[index]
        if mine == other or (base is not None and other == base[index]):
            merged.append(mine)
        elif base is not None and mine == base[index]:
            merged.append(other)
        else:
            conflicts.append(FieldConflict(node_id, name, reason))
    return tuple(merged), conflicts


def _merge_entries(
    base: Mapping[str, _Entry], ours: Mapping[str, _Entry], theirs: Mapping[str, _Entry]
) -> dict[str, _Entry] | TreeConflict:
    merged: dict[str, _Entry] = {}
    conflicts: list[FieldConflict] = []
    for node_id in sorted(ours.keys() | theirs.keys()):
        entry, found = _merge_entry(
            node_id, base.get(node_id), ours.get(node_id), theirs.get(node_id)
        )
        conflicts.extend(found)
        if entry is not None:
            merged[node_id] = entry
    return _conflict(conflicts) if conflicts else merged


def _conflict(conflicts: list[FieldConflict]) -> TreeConflict:
    return TreeConflict(tuple(sorted(conflicts, key=lambda item: (item.node_id, item.field))))


def _placement_conflicts(
    entries: Mapping[str, _Entry], children: Mapping[str | None, list[str]]
) -> list[FieldConflict]:
    """Nodes the merged parents do not hang from one root: below a removed parent, a second
    root, or in a cycle (no walk from a root or a node below a removed parent reaches it)."""
    roots = children.get(None, [])
    orphans = [
        node_id
        for node_id, entry in entries.items()
        if entry[0] is not None and entry[0] not in entries
    ]
    conflicts = [
        *(FieldConflict(node_id, "parent", ConflictReason.PARENT_REMOVED) for node_id in orphans),
        *(FieldConflict(root, "parent", ConflictReason.SECOND_ROOT) for root in roots[1:]),
    ]
    reached: set[str] = set()
    stack = [*roots, *orphans]
    while stack:
        node_id = stack.pop()
        reached.add(node_id)
        stack.extend(children.get(node_id, []))
    conflicts += [
        FieldConflict(node_id, "parent", ConflictReason.CYCLE)
        for node_id in entries
        if node_id not in reached
    ]
    return conflicts


def _built(entries: Mapping[str, _Entry], children: Mapping[str | None, list[str]]) -> Node:
    """The tree the merged entries describe, built bottom-up without recursion."""
    order: list[str] = children[None][:1]
    for node_id in order:
        order.extend(children.get(node_id, []))
    built: dict[str, Node] = {}
    for node_id in reversed(order):
        fields = dict(zip(DIFFED_FIELDS, entries[node_id][1:], strict=True))
        kids = tuple(built.pop(child) for child in children.get(node_id, []))
        built[node_id] = Node(id=node_id, children=kids, **fields)
    return built[order[0]]


def merge_trees(base: Node, ours: Node, theirs: Node) -> Node | TreeConflict:
    """The merge of `ours` (the run branch's tree) and `theirs` (a finished job's), both
    descending from `base` (the tree the job started from), settled; or why they conflict.
    Symmetric: swapping `ours` and `theirs` gives the same answer."""
    merged = _merge_entries(_entries(base), _entries(ours), _entries(theirs))
    if isinstance(merged, TreeConflict):
        return merged
    children: dict[str | None, list[str]] = {}
    for node_id in sorted(merged):
        children.setdefault(merged[node_id][0], []).append(node_id)
    placement = _placement_conflicts(merged, children)
    if placement:
        return _conflict(placement)
    return settle(_built(merged, children))
