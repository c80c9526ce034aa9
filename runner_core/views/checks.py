"""What `runner select --json` and `runner validate --json` print.

Decides the keys of those two documents, the same facts their text lines give. Never reads a
file.
"""

from __future__ import annotations

import re
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


# The sandbox's layers follow its mode (runner_shell.sandbox.status, SandboxStatus.layers).
SANDBOX_LAYERS = ("userns", "caps", "seccomp", "fs", "env", "net", "limits")
VALIDATION_KEYS = ("layout", "config", "tree", "run", "id", "branch", "sandbox", *SANDBOX_LAYERS)
# The checks among them, in the order they run (the id and branch are what `run` found).
CHECK_KEYS = ("layout", "config", "tree", "run", "sandbox")


# `key=value`, where a value may hold a parenthesised part with spaces: `net=proxy(3 hosts)`.
_PAIR = re.compile(r"(\w+)=((?:[^\s(]|\([^)]*\))+)")


def validation_to_json(lines: Sequence[str], error: str | None = None) -> dict[str, Any]:
    """`runner validate --json`: the `validate: key=value` lines printed, joined; with the
    `error` that stopped the checks, the first check not passed is the `failed` one."""
    document: dict[str, Any] = dict.fromkeys(VALIDATION_KEYS)
    for line in lines:
        for key, value in _PAIR.findall(line.removeprefix("validate: ")):
            document[key] = value
    if error is not None:
        failed = next(key for key in CHECK_KEYS if document[key] is None)
        document[failed] = "failed"
        document["error"] = error
    return document
