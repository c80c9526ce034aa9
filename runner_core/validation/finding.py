"""One error of one validation layer as a value: which layer, where, what kind, and the line.

Decides nothing: each layer builds these, and its string form (the contract line) is `message`;
`messages` renders a layer's findings as the lines the runner prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

import attrs

from runner_core.tree.model import TreeLayer

# The layers in the order the runner applies them to an agent's tree.
ValidationLayer = Literal[TreeLayer, "immutability", "status", "child_additions"]
LAYERS: tuple[ValidationLayer, ...] = get_args(ValidationLayer)


@attrs.frozen(slots=True)
class Finding:
    """One error a validation layer found in a tree.

    `layer` is one of LAYERS; `node_id` the node it is about (None when the text is not JSON
    or the node has no usable id); `path` where that node is: its ids from the root joined by
    `/` for a built tree, the JSON path of its object (`$.children[0]`) for the schema and
    JSON layers; `code` a stable name of the kind of error; `message` the exact line the
    runner prints for it (the layer's contract, never reworded). `fields` names the fields
    that differ, for a passed node that changed.
    """

    layer: ValidationLayer
    node_id: str | None
    path: str | None
    code: str
    message: str
    fields: tuple[str, ...] = ()


def messages(findings: Iterable[Finding]) -> tuple[str, ...]:
    """The contract lines of `findings`, in their order, each line once (one line may stand
    for findings at several paths, e.g. one child id added twice)."""
    return tuple(dict.fromkeys(finding.message for finding in findings))
