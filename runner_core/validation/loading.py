"""A valid tree from a tree file's text or JSON data: each layer in its order (JSON, schema,
the node's fields, invariants), raising `TreeValidationError` at the first that fails.

Decides only the order of the layers; what each checks is its own module's (`schema`,
`invariants`) and how text becomes a `Node` is `runner_core.tree.serialization`'s.
"""

from __future__ import annotations

from typing import Any

from runner_core.tree.model import Node
from runner_core.tree.serialization import (
    TreeValidationError,
    json_of,
    too_deep,
    tree_of_plain_nodes,
    tree_of_schema_valid,
    tree_text,
)
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.schema import schema_findings


def tree_from_json(obj: Any) -> Node:
    """A `Node` from JSON data of a tree (as `json.loads` returns it), siblings in the given
    order; `tree_to_json` is its inverse.

    Raises `TreeValidationError` (a `ValueError`) with the schema's errors when `obj` is not a
    tree the schema accepts. Checks only the schema: `runner_core.validation.invariants` (or
    `parse_tree`, which runs both) judges the tree as a whole.
    """
    try:
        schema_errors = messages(schema_findings(obj))
        if schema_errors:
            raise TreeValidationError("schema", schema_errors)
        return tree_of_schema_valid(obj)
    except RecursionError:  # JSON built in code, deeper than any text the reader accepts
        raise too_deep() from None


def tree_from_valid_json(obj: Any) -> Node:
    """schema → build → invariants, raising `TreeValidationError` at the first failing layer."""
    tree = tree_from_json(obj)
    invariant_errors = messages(invariant_findings(tree))
    if invariant_errors:
        raise TreeValidationError("invariants", invariant_errors)
    return tree


def parse_tree(text: str | bytes) -> Node:
    """Text of a tree file → a valid immutable tree (parse → schema → invariants).

    Canonical text is built while its JSON is decoded, in one pass and without keeping the
    decoded objects; anything else takes the layer-by-layer path, which alone words the
    errors. Both give the same tree or the same error.

    Raises `TreeValidationError` (a `ValueError`) naming the layer that refused the text
    (`json`, `schema` or `invariants`) and each of its errors.
    """
    decoded = tree_text(text)
    tree = tree_of_plain_nodes(decoded)
    if tree is None:
        return tree_from_valid_json(json_of(decoded))
    invariant_errors = messages(invariant_findings(tree))
    if invariant_errors:
        raise TreeValidationError("invariants", invariant_errors)
    return tree
