"""Whether a runner-owned JSON document (run_state.json, the journal) is of its shipped schema.

Decides the one line that names what is wrong: the `description` of the schema node nearest to
the failing field (each schema says its own messages), an unknown or a missing field by name,
a wrong enum value with what was found. Never reads the document itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

RUN_STATE_SCHEMA_FILE = "run_state.schema.json"
JOURNAL_SCHEMA_FILE = "journal.schema.json"


def document_problem(name: str, obj: Any) -> str | None:
    """None when `obj` is valid against the shipped schema `name`, else the line to print."""
    from fastjsonschema import JsonSchemaValueException

    from runner_core._validators import VALIDATORS

    validators: Mapping[str, Callable[[Any], Any]] = VALIDATORS
    try:
        validators[name](obj)
    except JsonSchemaValueException as error:
        return _problem(name, error.rule, list(error.path), error.value, error.definition)
    return None


def _problem(name: str, rule: str | None, path: list[Any], value: Any, definition: Any) -> str:
    from runner_core.schema import load_schema

    schema = load_schema(name)
    if rule == "additionalProperties" and isinstance(value, Mapping):
        known = set(definition.get("properties", {}))
        return f"unknown field '{sorted(set(value) - known)[0]}'"
    if rule == "required" and isinstance(value, Mapping):
        missing = next(key for key in definition["required"] if key not in value)
        return f"field '{missing}' is missing"
    described = _description(schema, path[1:])
    return f"{described}, got {value!r}" if rule == "enum" else described


def _description(schema: Mapping[str, Any], keys: list[Any]) -> str:
    """The description of the deepest schema node on `keys` that has one."""
    node: Any = schema
    found = str(schema.get("description", "is not valid"))
    for key in keys:
        if isinstance(key, str) and key in node.get("properties", {}):
            node = node["properties"][key]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        elif isinstance(node.get("items"), Mapping):
            node = node["items"]
        else:
            break
        found = str(node.get("description", found))
    return found
