"""Whether a runner-owned JSON document (run_state.json, meta.json, the journal) is of its schema.

Decides which field a schema error is about and what is wrong with it: the `description` of the
schema node nearest to the failing field (each shipped schema says its own messages, with
`{value!r}` or `{type}` standing for what was found), or that the field is missing or unknown.
Each document's reader puts the field and the problem into its own line. Reads no file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

RUN_STATE_SCHEMA_FILE = "run_state.schema.json"
JOURNAL_SCHEMA_FILE = "journal.schema.json"
META_SCHEMA_FILE = "meta.schema.json"
JOB_CHANGES_SCHEMA_FILE = "job_changes.schema.json"


@attrs.frozen(slots=True)
class DocumentProblem:
    """`field` is dotted ("tokens.input"), "" for the document itself."""

    field: str
    problem: str
    missing: bool = False
    unknown: bool = False


def document_problem(name: str, obj: Any) -> DocumentProblem | None:
    """None when `obj` is valid against the shipped schema `name`, else what is wrong."""
    from runner_core.validation._validators import VALIDATORS
    from runner_core.validation.refusal import SchemaRefusal

    validators: Mapping[str, Callable[[Any], Any]] = VALIDATORS
    try:
        validators[name](obj)
    except SchemaRefusal as error:
        return _problem(name, error.rule, [str(key) for key in error.path[1:]], error)
    return None


def _problem(name: str, rule: str | None, keys: list[str], error: Any) -> DocumentProblem:
    from runner_core.validation.schema import load_schema

    value, definition = error.value, error.definition
    if rule == "additionalProperties" and isinstance(value, Mapping):
        extra = sorted(set(value) - set(definition.get("properties", {})))[0]
        return DocumentProblem(".".join([*keys, extra]), f"unknown field '{extra}'", unknown=True)
    if rule == "required" and isinstance(value, Mapping):
        missing = next(key for key in definition["required"] if key not in value)
        return DocumentProblem(".".join([*keys, missing]), "missing", missing=True)
    described, template = _description(load_schema(name), keys)
    problem = template.format(value=value, type=type(value).__name__)
    return DocumentProblem(".".join(described), problem)


def _description(schema: Mapping[str, Any], keys: list[str]) -> tuple[list[str], str]:
    """The deepest schema node on `keys` that has a description: its keys and description."""
    node: Any = schema
    found: tuple[list[str], str] = ([], str(schema.get("description", "is not valid")))
    for depth, key in enumerate(keys, 1):
        if key in node.get("properties", {}):
            node = node["properties"][key]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        elif isinstance(node.get("items"), Mapping):
            node = node["items"]
        else:
            break
        if "description" in node:
            found = (keys[:depth], str(node["description"]))
    return found
