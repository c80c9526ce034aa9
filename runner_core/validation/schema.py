"""Layer 1 of validation: does a JSON document have the task tree's shape?

Decides schema validity of trees and agent outputs, using the JSON Schemas shipped in the
package (read once, with importlib.resources, like any other part of the program). The fast
path is one fastjsonschema validator, compiled ahead of time into
runner_core/validation/_validators.py;
only when it fails does a second pass walk the tree node by node to collect every violation
with its JSON path. A document nested deeper than either can follow is one error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from runner_core.validation.finding import Finding
from runner_core.validation.refusal import SchemaRefusal

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from fastjsonschema import JsonSchemaValueException

Validator = Callable[[Any], Any]

TREE_SCHEMA_FILE = "task_tree/v1.schema.json"
DECOMPOSER_OUTPUT_SCHEMA_FILE = "decomposer_output.schema.json"
EXECUTOR_OUTPUT_SCHEMA_FILE = "executor_output.schema.json"


TREE_TOO_DEEP = (
    "$ nests deeper than the schema validator can follow (a tree is at most 100 levels deep)"
)


def _schema_files() -> Traversable:
    """Where the shipped schemas are: the `runner_core.schemas` resources when installed.

    In a source checkout on PYTHONPATH (no install) that package does not exist: setuptools
    makes it from the top-level `schemas/` directory, which is then found beside runner_core.
    """
    from importlib import resources  # imported here: most commands never read a schema

    try:
        return resources.files("runner_core.schemas")
    except ModuleNotFoundError:
        return resources.files("runner_core").joinpath("..", "schemas")


@functools.cache
def schema_text(name: str) -> str:
    """The exact text of a shipped schema, e.g. to copy it into `.runner/state/`."""
    return _schema_files().joinpath(name).read_text(encoding="utf-8")


@functools.cache
def load_schema(name: str) -> Mapping[str, Any]:
    loaded: Mapping[str, Any] = json.loads(schema_text(name))
    return loaded


@functools.cache
def _compiled(name: str) -> Validator:
    # The shipped schemas come compiled ahead of time (scripts/gen_validators.py): compiling
    # one costs a short command more than validating with it.
    from runner_core.validation._validators import VALIDATORS

    precompiled: Mapping[str, Validator] = VALIDATORS
    if name in precompiled:
        return precompiled[name]
    import fastjsonschema

    compiled: Validator = fastjsonschema.compile(dict(load_schema(name)))
    return compiled


def _value_exception() -> tuple[type[SchemaRefusal], type[JsonSchemaValueException]]:
    """What a validator raises on a refused document: a schema compiled ahead of time its
    `SchemaRefusal`, one compiled here fastjsonschema's own (imported only on a refusal)."""
    from fastjsonschema import JsonSchemaValueException

    return SchemaRefusal, JsonSchemaValueException


@functools.cache
def _node_checks() -> tuple[tuple[str, ...], tuple[tuple[str, Validator], ...]]:
    """The node definition split into one validator per field, children left shallow."""
    import fastjsonschema

    node = load_schema(TREE_SCHEMA_FILE)["$defs"]["node"]
    checks = []
    for field, definition in node["properties"].items():
        if field == "children":
            # Each child is checked as a node of its own when the walk reaches it.
            definition = {"type": "array"}
        checks.append((field, fastjsonschema.compile(definition)))
    return tuple(node["required"]), tuple(checks)


def _located(message: str, path: str) -> str:
    """fastjsonschema names the document `data`; say where in the tree instead."""
    return path + message[4:] if message.startswith("data") else f"{path}: {message}"


def _node_errors(obj: Any, path: str) -> list[Finding]:
    if not isinstance(obj, dict):
        return [Finding("schema", None, path, "not_object", f"{path} must be object")]
    node_id = obj.get("id") if isinstance(obj.get("id"), str) and obj["id"] else None
    required, checks = _node_checks()
    errors = [
        Finding("schema", node_id, path, "missing_field", f"{path} must contain '{field}'")
        for field in required
        if field not in obj
    ]
    known = {field for field, _ in checks}
    errors.extend(
        Finding("schema", node_id, path, "unknown_field", f"{path} must not contain '{key}'")
        for key in obj
        if key not in known
    )
    for field, check in checks:
        if field in obj:
            try:
                check(obj[field])
            except _value_exception() as error:
                message = _located(error.message, f"{path}.{field}")
                errors.append(Finding("schema", node_id, path, "invalid_value", message))
    return errors


def _collect_tree_errors(node: Any, path: str, errors: list[Finding]) -> None:
    errors.extend(_node_errors(node, path))
    children = node.get("children") if isinstance(node, dict) else None
    if isinstance(children, list):
        for index, child in enumerate(children):
            _collect_tree_errors(child, f"{path}.children[{index}]", errors)


def schema_findings(obj: Any) -> tuple[Finding, ...]:
    """Every schema violation of a task tree document, sorted by message; empty when it is
    valid. `path` is the JSON path of the node object at fault and `node_id` its id when it
    has a usable one."""
    validate = _compiled(TREE_SCHEMA_FILE)
    errors: list[Finding] = []
    try:
        try:
            validate(obj)
            return ()
        except _value_exception():
            _collect_tree_errors(obj, "$", errors)
    except RecursionError:
        return (Finding("schema", None, "$", "too_deep", TREE_TOO_DEEP),)
    return tuple(sorted(errors, key=lambda found: found.message))


def _document_findings(name: str, obj: Any) -> tuple[Finding, ...]:
    validate = _compiled(name)
    try:
        validate(obj)
    except _value_exception() as error:
        message = _located(error.message, "$")
        return (Finding("schema", None, "$", "invalid_document", message),)
    return ()


def decomposer_output_findings(obj: Any) -> tuple[Finding, ...]:
    """Schema errors of a decomposer's output: its shape only.

    No children and blank titles or goals are `decompose.decomposition_problems`, agent
    errors the next attempt is told about, not runner errors hidden from the agent.
    """
    return _document_findings(DECOMPOSER_OUTPUT_SCHEMA_FILE, obj)


def executor_output_findings(obj: Any) -> tuple[Finding, ...]:
    """Schema errors of an executor's output."""
    return _document_findings(EXECUTOR_OUTPUT_SCHEMA_FILE, obj)
