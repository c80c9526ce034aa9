"""What `runner select --json` and `runner validate --json` print.

Decides the keys of those two documents, the same facts their text lines give. Never reads a
file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runner_core.tree.selection import Selection


def selection_to_json(selection: Selection) -> dict[str, Any]:
    """`runner select --json`: the next leaf, as `select:` prints it."""
    node = selection.node
    return {
        "status": selection.status.value,
        "id": None if node is None else node.id,
        "path": selection.path,
        "attempts": None if node is None else node.attempts,
        "max_attempts": None if node is None else node.max_attempts,
    }


VALIDATION_KEYS = ("layout", "config", "tree", "run", "id", "branch", "sandbox")


def validation_to_json(lines: Sequence[str]) -> dict[str, Any]:
    """`runner validate --json`: the `validate: key=value` lines of a passing check, joined."""
    document: dict[str, Any] = dict.fromkeys(VALIDATION_KEYS)
    for line in lines:
        for pair in line.removeprefix("validate: ").split():
            key, _, value = pair.partition("=")
            document[key] = value
    return document
