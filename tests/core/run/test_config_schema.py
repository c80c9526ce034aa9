"""Specification of schemas/config.schema.json against the config's types and constants.

The schema is the one description of what config.toml may hold: every field of `Config` (and
of the table types it holds) is a key of the schema and every key of the schema a field; its
choices and bounds are the program's; each description is a one-line problem that names only
what the error knows; and it is a Draft 2020-12 schema shipped beside the others.
"""

from __future__ import annotations

import string
import subprocess
import sys
import typing
from collections.abc import Mapping
from typing import Any

import attrs
import jsonschema
import pytest

from runner_core.backends.registry import BACKENDS, BackendName, FallbackBackend
from runner_core.run.config import (
    MAX_RERUNS,
    MAX_VALUES,
    Config,
    ConfigError,
    GuardMode,
    OnStuck,
    parse_config,
)
from runner_core.run.config_schema import CONFIG_SCHEMA_FILE, check_config_schema
from runner_core.run.executor_config import ExecutorKind
from runner_core.run.notify_config import NOTIFY_EVENTS, NotifyEvent
from runner_core.run.sandbox_config import SANDBOX_LIMITS, SANDBOX_MODES, SandboxMode
from runner_core.validation.schema import load_schema

SCHEMA = load_schema(CONFIG_SCHEMA_FILE)
# `Config.budget.max_agent_iterations` is `[loop] max_agent_iterations`, copied for the budget.
COPIED = {"budget.max_agent_iterations"}


def resolved(node: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rpartition("/")[2]]
    return node


def schema_keys(node: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Every dotted key under `node`: a table's keys, each table's own below it."""
    keys: set[str] = set()
    for name, child in resolved(node).get("properties", {}).items():
        child = resolved(child)
        if child.get("type") == "object":
            keys |= schema_keys(child, f"{prefix}{name}.")
        else:
            keys.add(f"{prefix}{name}")
    return keys


def field_keys(cls: type, prefix: str = "", top: Mapping[str, Any] | None = None) -> set[str]:
    """Every dotted key `cls`'s fields stand for: a field named as a top-level key of the
    schema (`top`) is that key, else a field `<table>_<key>` is `<table>.<key>` when `<table>` is
    a top-level table; a field holding an attrs class is a table of that class's fields."""
    hints = typing.get_type_hints(cls)
    keys: set[str] = set()
    for field in attrs.fields(cls):
        table, _, rest = field.name.partition("_")
        top_level = top is not None and field.name not in top and table in top
        name = f"{table}.{rest}" if top_level else field.name
        kinds = [kind for kind in typing.get_args(hints[field.name]) if kind is not type(None)]
        kind = kinds[0] if kinds else hints[field.name]
        if attrs.has(kind):
            keys |= field_keys(kind, f"{prefix}{name}.")
        else:
            keys.add(f"{prefix}{name}")
    return keys


def test_every_field_of_the_config_types_is_a_key_of_the_schema_and_back() -> None:
    # A table's key left out of the schema would be refused; one left out of the types, lost.
    assert field_keys(Config, top=SCHEMA["properties"]) - COPIED == schema_keys(SCHEMA)


def node_at(dotted: str) -> Mapping[str, Any]:
    node: Mapping[str, Any] = SCHEMA
    for name in dotted.split("."):
        node = resolved(resolved(node)["properties"][name])
    return node


def bounds(dotted: str) -> tuple[int, int]:
    node = node_at(dotted)
    parts = [node, *node.get("allOf", [])]
    low = next(part["minimum"] for part in parts if "minimum" in part)
    high = next(part["maximum"] for part in parts if "maximum" in part)
    return low, high


def test_the_bounds_the_program_knows_are_the_schemas() -> None:
    assert {key: bounds(key)[1] for key in MAX_VALUES} == dict(MAX_VALUES)
    assert bounds("guard.rerun_failures") == (0, MAX_RERUNS)
    assert {key: bounds(f"sandbox.{key}") for key in SANDBOX_LIMITS} == dict(SANDBOX_LIMITS)


def test_the_choices_the_program_knows_are_the_schemas() -> None:
    with_program = sorted(name for name, info in BACKENDS.items() if info.program is not None)
    fallback_items = node_at("agent.fallback")["items"]["allOf"][0]
    assert node_at("agent.backend")["enum"] == list(BACKENDS)
    assert resolved(node_at("agent.decomposer"))["properties"]["backend"]["enum"] == list(BACKENDS)
    assert fallback_items["enum"] == with_program
    assert node_at("sandbox.mode")["enum"] == list(SANDBOX_MODES)
    assert node_at("notify.on")["items"]["allOf"][0]["enum"] == list(NOTIFY_EVENTS)


# Each config field typed as a Literal, and where the schema keeps its choices.
LITERAL_FIELDS: tuple[tuple[Any, str], ...] = (
    (GuardMode, "guard.mode"),
    (BackendName, "agent.backend"),
    (FallbackBackend, "agent.fallback"),
    (OnStuck, "loop.on_stuck"),
    (SandboxMode, "sandbox.mode"),
    (ExecutorKind, "executor.kind"),
    (NotifyEvent, "notify.on"),
)


@pytest.mark.parametrize(("literal", "key"), LITERAL_FIELDS, ids=[key for _, key in LITERAL_FIELDS])
def test_each_literal_type_holds_the_schemas_choices_in_its_order(literal: Any, key: str) -> None:
    node = node_at(key)
    choices = node["items"]["allOf"][0] if node.get("type") == "array" else node
    assert list(typing.get_args(literal)) == choices["enum"]


def test_the_backend_literal_names_every_backend_of_the_registry() -> None:
    assert typing.get_args(BackendName) == tuple(BACKENDS)


def test_the_fallback_literal_names_every_backend_with_a_program_of_its_own() -> None:
    with_program = {name for name, info in BACKENDS.items() if info.program is not None}
    assert set(typing.get_args(FallbackBackend)) == with_program


def descriptions(node: Any) -> list[str]:
    if isinstance(node, Mapping):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [text for value in node.values() for text in descriptions(value)]
    if isinstance(node, list):
        return [text for value in node for text in descriptions(value)]
    return []


def test_each_description_is_one_line_naming_only_what_an_error_knows() -> None:
    found = descriptions(SCHEMA)
    assert len(found) > 40
    for text in found:
        fields = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        assert fields <= {"value", "item", "count"}, text
        assert "\n" not in text and text == text.strip(), text


def test_the_schema_is_a_draft_2020_12_schema_that_accepts_the_default_config() -> None:
    jsonschema.Draft202012Validator.check_schema(dict(SCHEMA))
    jsonschema.validate({}, dict(SCHEMA), cls=jsonschema.Draft202012Validator)
    check_config_schema({})


@pytest.mark.parametrize(
    ("data", "line"),
    [
        # The key is named down to the element when the element's own line says the value.
        ({"loop": {"runner_error_backoff_secs": [1, -1]}}, "loop.runner_error_backoff_secs[1]"),
        # ... else the array is, and its line shows the element that failed.
        ({"sandbox": {"read_only": ["/usr", "opt"]}}, "sandbox.read_only: must hold absolute"),
        ({"agent": {"executor": {"cmd": []}}}, "agent.executor.cmd: unknown key"),
        ({"max_iterations": 10**400}, "got a number of more than 20 digits"),
        ({"notify": {"urls": ["a://b"] * 33}}, "must list at most 32 URLs, got 33"),
    ],
)
def test_a_schema_error_is_one_line_naming_the_key(data: dict[str, Any], line: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)

    assert line in str(raised.value)
    assert "\n" not in str(raised.value)


def test_reading_a_config_loads_neither_fastjsonschema_nor_the_toml_writer() -> None:
    # Every command reads the config: its schema comes compiled, its writer is for writing.
    probe = (
        "import sys\n"
        "from runner_core import ConfigError, parse_config\n"
        "parse_config({'guard': {'command': ['make']}})\n"
        "try:\n"
        "    parse_config({'guard': {'command': 'make'}})\n"
        "except ConfigError as error:\n"
        "    print(error)\n"
        "print(sorted({'fastjsonschema', 'decimal', 'tomli_w'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "guard.command: must be an array of strings (argv, no shell), got 'make'",
        "[]",
    ]
