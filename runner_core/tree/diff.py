"""What changed between two task trees, node by node (`runner diff`, `runner audit`).

Decides which nodes were added, removed or moved (their parent changed) and, for nodes in
both trees, each own field that changed, old value and new. Nodes are matched by id (the first
in pre-order when a broken tree repeats one). Never judges whether a change was allowed; the
audit does that.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs

from runner_core.json_form import shaped
from runner_core.tree.model import NODE_FIELDS, Node, index_by_id

# Every field but id and children: a node's own content.
DIFFED_FIELDS: tuple[str, ...] = tuple(
    name for name in NODE_FIELDS if name not in ("id", "children")
)


class ChangeKind(enum.StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@attrs.frozen(slots=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@attrs.frozen(slots=True)
class NodeChange:
    """One node's change; `moved` when its parent differs, `fields` for a changed node; its
    fields are the keys of a change in `runner diff --json` (schemas/views/diff.schema.json)."""

    node_id: str = attrs.field(metadata=shaped(key="node"))
    kind: ChangeKind = attrs.field(metadata=shaped(key="change"))
    moved: bool = attrs.field(init=False, default=False)
    parent_before: str | None = None
    parent_after: str | None = None
    fields: tuple[FieldChange, ...] = ()

    def __attrs_post_init__(self) -> None:
        # Derived from the parents after them, and yet written before them.
        moved = self.kind is ChangeKind.CHANGED and self.parent_before != self.parent_after
        object.__setattr__(self, "moved", moved)


@attrs.frozen(slots=True)
class TreeDiff:
    """Every node that differs, sorted by node id; empty when the trees hold the same nodes."""

    changes: tuple[NodeChange, ...] = ()


def _field_value(node: Node, name: str) -> Any:
    value = getattr(node, name)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


def _field_changes(before: Node, after: Node) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(name, _field_value(before, name), _field_value(after, name))
        for name in DIFFED_FIELDS
        if _field_value(before, name) != _field_value(after, name)
    )


def tree_diff(before: Node, after: Node) -> TreeDiff:
    """The node-by-node change from `before` to `after`."""
    (old, old_parents), (new, new_parents) = index_by_id(before), index_by_id(after)
    changes: list[NodeChange] = []
    for node_id in sorted(old.keys() | new.keys()):
        if node_id not in new:
            changes.append(
                NodeChange(node_id, ChangeKind.REMOVED, parent_before=old_parents[node_id])
            )
        elif node_id not in old:
            changes.append(NodeChange(node_id, ChangeKind.ADDED, parent_after=new_parents[node_id]))
        else:
            was, was_parent = old[node_id], old_parents[node_id]
            now, now_parent = new[node_id], new_parents[node_id]
            fields = _field_changes(was, now)
            if fields or was_parent != now_parent:
                changes.append(
                    NodeChange(node_id, ChangeKind.CHANGED, was_parent, now_parent, fields)
                )
    return TreeDiff(tuple(changes))


def _value_text(value: Any) -> str:
    """A field's value in a diff line: booleans as tree.json spells them, the rest as Python
    quotes them (a title's spaces stay visibly inside its quotes)."""
    return json.dumps(value) if isinstance(value, bool) else repr(value)


def change_lines(diff: TreeDiff) -> tuple[str, ...]:
    """One line per change: `added X under P`, `removed X`, `X moved P -> Q`, `X field: a -> b`."""
    lines: list[str] = []
    for change in diff.changes:
        if change.kind is ChangeKind.ADDED:
            lines.append(f"added {change.node_id} under {change.parent_after}")
        elif change.kind is ChangeKind.REMOVED:
            lines.append(f"removed {change.node_id} from {change.parent_before}")
        else:
            if change.moved:
                lines.append(
                    f"{change.node_id} moved {change.parent_before} -> {change.parent_after}"
                )
            lines.extend(
                f"{change.node_id} {field.field}: {_value_text(field.old)} -> "
                f"{_value_text(field.new)}"
                for field in change.fields
            )
    return tuple(lines)
