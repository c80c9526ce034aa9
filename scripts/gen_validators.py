"""Write runner_core/validation/_validators.py (the shipped JSON Schemas, compiled by
fastjsonschema), runner_core/run/_config_validator.py (config.schema.json, compiled the same
way) and runner_core/tree/_node_validator.py (how a task tree node is read and written).

    python scripts/gen_validators.py          # rewrite the modules
    python scripts/gen_validators.py --check  # exit 1 if they are not what this would write

Compiling a schema at run time costs a `runner step` a few milliseconds of every start-up;
the compiled code is the same either way. tests/test_generated_validators.py fails when the
module and schemas/ disagree.

In _node_validator.py it writes, from the task tree's node definition,
`plain_node_reader` (the one-pass fast path of `runner_core.tree.serialization`, which
`runner_core.validation.loading.parse_tree` tries first: a node's
JSON object, as decoded key/value pairs in the schema's order, checked and built into a node)
and `canonical_node_text` (a node's fields as canonical JSON). Both are derived from the
schema here, so the schema stays the only description of a node's shape.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Any

import fastjsonschema

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
TARGET = ROOT / "runner_core" / "validation" / "_validators.py"
# Kept apart from the validators so reading a tree never imports fastjsonschema.
TREE_NODE_TARGET = ROOT / "runner_core" / "tree" / "_node_validator.py"
# Kept apart too: every command reads the config, and the other schemas' code is large.
CONFIG_TARGET = ROOT / "runner_core" / "run" / "_config_validator.py"
CONFIG_SCHEMA_FILE = "config.schema.json"
# The schemas runner_core.validation.schema validates with, by their names under schemas/.
SCHEMA_FILES = (
    "task_tree/v1.schema.json",
    "executor_output.schema.json",
    "decomposer_output.schema.json",
    "run_state.schema.json",
    "journal.schema.json",
    "meta.schema.json",
    "job_changes.schema.json",
    "merger_output.schema.json",
)


NODE_DEFINITION = ("task_tree/v1.schema.json", "#/$defs/node")


def _condition(name: str, definition: dict[str, Any], node_type: str = "node_type") -> str:
    """A Python expression true exactly when the value `name` meets `definition`, a node
    being of the type named `node_type`.

    Only the keywords the node definition uses are understood, strictly (a float is no
    integer, a bool no number); any other keyword stops the generator, so a schema change
    cannot make the fast path accept less carefully than the schema.
    """
    known = {"type", "minLength", "minimum", "enum", "items", "$ref"}
    unknown = set(definition) - known
    if unknown:
        raise SystemExit(f"plain_node_reader: no check for {sorted(unknown)}; extend the generator")
    if definition.get("$ref") == NODE_DEFINITION[1]:
        return f"type({name}) is {node_type}"
    types = {"string": "str", "integer": "int", "boolean": "bool", "array": "list"}
    parts: list[str] = []
    if "type" in definition:
        if definition["type"] not in types:
            raise SystemExit(f"plain_node_reader: no check for type {definition['type']!r}")
        parts.append(f"type({name}) is {types[definition['type']]}")
    if "enum" in definition:
        values = definition["enum"]
        assert isinstance(values, list) and all(isinstance(value, str) for value in values)
        parts.append(f"type({name}) is str and {name} in {tuple(values)!r}")
    if "minLength" in definition:
        parts.append(f"len({name}) >= {definition['minLength']}")
    if "minimum" in definition:
        parts.append(f"{name} >= {definition['minimum']}")
    if "items" in definition:
        items = definition["items"]
        assert isinstance(items, dict)
        item = _condition("item", items, node_type)
        kind = item.removeprefix("type(item) is ")
        if kind.isidentifier():  # a check of the item's type alone: one C call, no frame
            parts.append(f"{{{kind}}}.issuperset(map(type, {name}))")
        else:
            parts.append(f"all([{item} for item in {name}])")
    return " and ".join(parts)


def _node_properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    node = schema["$defs"]["node"]
    properties: dict[str, dict[str, Any]] = node["properties"]
    fields = list(properties)
    if node.get("additionalProperties") is not False or node.get("required") != fields:
        raise SystemExit("task tree node: it must require exactly its properties, in order")
    if fields[-1] != "children":
        raise SystemExit("task tree node: `children` must be its last property")
    return properties


def _node_checks(
    properties: dict[str, dict[str, Any]], node_type: str = "node_type"
) -> tuple[str, str]:
    """The unpacking of a node's decoded pairs, and the condition true exactly when they are
    the schema's keys in its order with values it accepts (children of type `node_type`)."""
    fields = list(properties)
    names = [f"v{index}" for index in range(len(fields))]
    checks = [f"k{index} == {field!r}" for index, field in enumerate(fields)]
    checks += [
        _condition(name, properties[field], node_type)
        for name, field in zip(names, fields, strict=True)
    ]
    pairs = ", ".join(f"(k{index}, {name})" for index, name in enumerate(names))
    return pairs, "\n            and ".join(f"({check})" for check in checks)


def _plain_node_reader(properties: dict[str, dict[str, Any]]) -> str:
    fields = list(properties)
    names = [f"v{index}" for index in range(len(fields))]
    pairs, condition = _node_checks(properties)
    values = []
    for name, field in zip(names, fields, strict=True):
        definition = properties[field]
        if "enum" in definition:
            values.append(f"members[{field!r}][{name}]")
        elif definition.get("type") == "array":
            values.append(f"tuple({name})")
        else:
            values.append(name)
    return (
        "def plain_node_reader(\n"
        "    node_type: type[Any],\n"
        "    init: Callable[..., None],\n"
        "    members: Mapping[str, Mapping[str, Any]],\n"
        "    refuse: type[Exception],\n"
        ") -> Callable[[Pairs], Any]:\n"
        '    """An `object_pairs_hook` building a task tree node from an object whose keys are in\n'
        "    the schema's order and whose values the node definition accepts, as a bare\n"
        "    `node_type` whose fields `init(node, *values)` sets without checking them again,\n"
        "    and raising `refuse` for any other object. `members` maps each enum field to its\n"
        '    members by value; children must already be `node_type`s."""\n'
        "    new = object.__new__\n"
        "\n"
        "    def read(pairs: Pairs) -> Any:\n"
        f"        if len(pairs) != {len(fields)}:\n"
        "            raise refuse\n"
        f"        {pairs}, = pairs\n"
        f"        if not (\n            {condition}\n        ):\n"
        "            raise refuse\n"
        "        node = new(node_type)\n"
        f"        init(node, {', '.join(values)})\n"
        "        return node\n"
        "\n"
        "    return read\n"
    )


def _plain_values_reader(properties: dict[str, dict[str, Any]]) -> str:
    fields = list(properties)
    # A node is kept as the tuple of its values: JSON decodes no tuple, so a child that is
    # one was read by this hook.
    pairs, condition = _node_checks(properties, "tuple")
    values = ", ".join(f"v{index}" for index in range(len(fields)))
    return (
        f"NODE_FIELDS = {tuple(fields)!r}\n"
        "\n"
        "\n"
        "def plain_values_reader(refuse: type[Exception]) -> Callable[[Pairs], tuple[Any, ...]]:\n"
        '    """An `object_pairs_hook` accepting exactly the objects `plain_node_reader` accepts,\n'
        "    each kept as the tuple of its values in the schema's order (NODE_FIELDS), enums as\n"
        "    their strings and arrays as lists, and raising `refuse` for any other object:\n"
        '    nothing is built, for a reader that only asks questions of the tree."""\n'
        "\n"
        "    def read(pairs: Pairs) -> tuple[Any, ...]:\n"
        f"        if len(pairs) != {len(fields)}:\n"
        "            raise refuse\n"
        f"        {pairs}, = pairs\n"
        f"        if not (\n            {condition}\n        ):\n"
        "            raise refuse\n"
        f"        return ({values})\n"
        "\n"
        "    return read\n"
    )


def _canonical_value(field: str, definition: dict[str, Any]) -> str:
    attribute = f"node.{field}"
    if "enum" in definition:
        return f"encode({attribute}._value_)"  # `.value` is a slower descriptor
    kind = definition.get("type")
    if kind == "string":
        return f"encode({attribute})"
    if kind == "integer":
        return attribute
    if kind == "boolean":
        return f"('true' if {attribute} else 'false')"
    if kind == "array" and definition.get("items") == {"type": "string"}:
        return f"(array({attribute}) if {attribute} else '[]')"
    raise SystemExit(f"canonical_node_text: no canonical text for {field}; extend the generator")


def _canonical_node_text(properties: dict[str, dict[str, Any]]) -> str:
    own = [field for field in properties if field != "children"]
    prefixes = ", ".join(f"p{index}" for index in range(len(own)))
    text = "".join(
        f"{{p{index}}}{{{_canonical_value(field, properties[field])}}}"
        for index, field in enumerate(own)
    )
    return (
        "def canonical_node_text(\n"
        "    node: Any,\n"
        "    prefixes: Sequence[str],\n"
        "    array: Callable[[Sequence[str]], str],\n"
        "    encode: Callable[[str], str],\n"
        "    end: str,\n"
        ") -> str:\n"
        '    """A node\'s fields but its children as canonical JSON text, then `end`: each field\n'
        "    after its prefix (the key and the indentation of its depth), strings through\n"
        '    `encode`, non-empty arrays of strings through `array`."""\n'
        f"    {prefixes}, = prefixes\n"
        f'    return f"{text}{{end}}"\n'
    )


def generate() -> str:
    """The text of runner_core/validation/_validators.py: the schemas, compiled."""
    return _reading_only(_compiled_module(SCHEMA_FILES), "validators")


# fastjsonschema's test of `"type": "integer"`, which lets a float with no fraction pass.
_FLOAT_AS_INTEGER = re.compile(r" and not \(isinstance\((\w+), float\) and \1\.is_integer\(\)\)")


def generate_config() -> str:
    """The text of runner_core/run/_config_validator.py: config.schema.json, compiled.

    TOML tells `3` from `3.0` where JSON Schema does not: an integer key holding a float is
    refused, with its key's own line, rather than read as a whole number.
    """
    code, count = _FLOAT_AS_INTEGER.subn("", _compiled_module((CONFIG_SCHEMA_FILE,)))
    if not count:
        raise SystemExit("config validator: fastjsonschema's integer test changed; update it")
    code = _reading_only(code, "config validator")
    # The schema's patterns, compiled once, as a table no caller can change.
    code, count = _REGEX_TABLE.subn(r"REGEX_PATTERNS = MappingProxyType(\1)\n", code)
    if count != 1:
        raise SystemExit("config validator: no REGEX_PATTERNS table to freeze; update it")
    return code


_REGEX_TABLE = re.compile(r"^REGEX_PATTERNS = (\{\n.*?\n\})\n", re.MULTILINE | re.DOTALL)


# What reads a document imports neither fastjsonschema (its compiler, when the code is compiled
# already) nor decimal (decoded JSON and parsed TOML hold no Decimal).
_HEADER = (
    ("from decimal import Decimal\n", "from types import MappingProxyType\n"),
    (", Decimal", ""),
    (
        "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException\n",
        "from runner_core.validation.refusal import SchemaRefusal as JsonSchemaValueException\n"
        "from runner_core.validation.refusal import SchemaRefusal as JsonSchemaValuesException\n",
    ),
)


def _reading_only(code: str, module: str) -> str:
    """`code` importing what reading needs alone (_HEADER)."""
    for old, new in _HEADER:
        if old not in code:
            raise SystemExit(f"{module}: no {old.strip()!r} to replace; update it")
        code = code.replace(old, new)
    if "Decimal" in code:
        raise SystemExit(f"{module}: Decimal is still named; update _HEADER")
    return code


def _compiled_module(names: tuple[str, ...]) -> str:
    """A module of the schemas `names` compiled by fastjsonschema, with VALIDATORS and
    SCHEMA_SHA256 by name."""
    import json

    header = None
    bodies: list[str] = []
    entries: list[str] = []
    hashes: list[str] = []
    for name in names:
        text = (SCHEMAS / name).read_text(encoding="utf-8")
        code = fastjsonschema.compile_to_code(json.loads(text))
        head, separator, body = code.partition("\ndef ")
        if header is None:
            header = head
        elif head != header:
            raise SystemExit(f"fastjsonschema wrote a different preamble for {name}")
        function = body.split("(", 1)[0]
        bodies.append(separator.lstrip("\n") + body.rstrip("\n") + "\n")
        entries.append(f"    {name!r}: {function},\n")
        hashes.append(f"    {name!r}: {hashlib.sha256(text.encode('utf-8')).hexdigest()!r},\n")
    assert header is not None
    return (
        "# Generated by scripts/gen_validators.py from schemas/; do not edit.\n"
        "# ruff: noqa\n"
        # fastjsonschema's code is untyped; the module header says so to every mypy run, with
        # or without this project's configuration.
        "# mypy: ignore-errors\n"
        f"{header.rstrip()}\n"
        "from types import MappingProxyType\n\n\n"
        + "\n\n".join(bodies)
        + "\n\n# The compiled validator of each schema, by its name under schemas/.\n"
        + "VALIDATORS = MappingProxyType({\n"
        + "".join(entries)
        + "})\n\n# What each schema's text was when this module was generated.\n"
        + "SCHEMA_SHA256 = MappingProxyType({\n"
        + "".join(hashes)
        + "})\n"
    )


def generate_tree_node() -> str:
    """The text of runner_core/tree/_node_validator.py for the task tree schema."""
    import json

    text = (SCHEMAS / NODE_DEFINITION[0]).read_text(encoding="utf-8")
    node_properties = _node_properties(json.loads(text))
    return (
        "# Generated by scripts/gen_validators.py from schemas/; do not edit.\n"
        "# ruff: noqa\n"
        '"""How runner_core.tree.serialization reads and writes one task tree node: derived from\n'
        'the node definition of schemas/task_tree/v1.schema.json, its only description."""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "from typing import TYPE_CHECKING, Any\n"
        "\n"
        "if TYPE_CHECKING:\n"
        "    from collections.abc import Callable, Mapping, Sequence\n"
        "\n"
        "    # A node's JSON object as the decoder hands it to an `object_pairs_hook`.\n"
        "    Pairs = list[tuple[str, Any]]\n"
        "\n"
        f"SCHEMA_SHA256 = {hashlib.sha256(text.encode('utf-8')).hexdigest()!r}\n\n\n"
        + _plain_node_reader(node_properties)
        + "\n\n"
        + _plain_values_reader(node_properties)
        + "\n\n"
        + _canonical_node_text(node_properties)
    )


def main(argv: list[str]) -> int:
    texts = {
        TARGET: generate(),
        TREE_NODE_TARGET: generate_tree_node(),
        CONFIG_TARGET: generate_config(),
    }
    if argv == ["--check"]:
        stale = 0
        for target, text in texts.items():
            current = target.read_text(encoding="utf-8") if target.exists() else ""
            if current != text:
                print(f"{target.relative_to(ROOT)} is stale: run python scripts/gen_validators.py")
                stale = 1
        return stale
    for target, text in texts.items():
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
