"""Each view type and its document's schema say the same keys: the type is the document's source
(runner_core/json_form.py), the schema under schemas/views/ documents it, and this one
table holds them together."""

from __future__ import annotations

import json
import types
import typing
from enum import Enum
from importlib import resources
from typing import Any

import attrs
import pytest

from runner_core.guard.ratchet import TestFigures
from runner_core.guard.report import TestReport
from runner_core.json_form import json_form, shape_of, shaped
from runner_core.run.listing import RunsDocument
from runner_core.views.diff import DiffDocument
from runner_core.views.history import HistoryDocument
from runner_core.views.report import Report
from runner_core.views.show import ShowDocument
from runner_core.views.workers import WorkersDocument

# Each view type whose `json_form` is a `--json` document, and its schema's name.
VIEW_SCHEMAS: tuple[tuple[type, str], ...] = (
    (DiffDocument, "diff"),
    (HistoryDocument, "history"),
    (Report, "report"),
    (RunsDocument, "runs"),
    (ShowDocument, "show"),
    (WorkersDocument, "workers"),
)


# Types a view module names only under TYPE_CHECKING (it imports them where it uses them, so a
# command that never does defines none of their classes): the hints are resolved with them.
TYPE_CHECKING_NAMES: dict[str, Any] = {"TestFigures": TestFigures, "TestReport": TestReport}


def hints_of(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind, localns=TYPE_CHECKING_NAMES)


def schema(name: str) -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath(f"views/{name}.schema.json")
    found: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return found


def document_keys(kind: type) -> tuple[list[str], set[str]]:
    """The keys a view type's document has, in order, and those it always has."""
    keys: list[str] = []
    required: set[str] = set()
    hints = hints_of(kind)
    for field in attrs.fields(kind):
        shape = shape_of(field)
        if shape.skip:
            continue
        if shape.inline:
            inner = list(shape.keys) if shape.keys else document_keys(hints[field.name])[0]
            inner_required = set(inner) if shape.keys else document_keys(hints[field.name])[1]
            keys += inner
            required |= inner_required
            continue
        key = shape.key or field.name
        keys.append(key)
        if not shape.omit_none:
            required.add(key)
    return keys, required


def _resolved(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    """A schema node with its `$ref` followed and its null branch dropped (`true`: anything)."""
    while True:
        if not isinstance(node, dict):
            return {}
        if "$ref" in node:
            node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next(branch for branch in node["anyOf"] if branch.get("type") != "null")
        else:
            return node


def _inner(hint: Any) -> tuple[Any, bool]:
    """The type a field's value holds, without None, and whether it holds a tuple of them."""
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if typing.get_origin(hint) is tuple and args:
        return args[0], True
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        return _inner(args[0])
    return hint, False


def nested_mismatches(kind: type, node: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """Each object inside a view's document whose type and schema say other keys."""
    found: list[str] = []
    hints = hints_of(kind)
    for field in attrs.fields(kind):
        shape = shape_of(field)
        if shape.skip or shape.encode is not None:
            continue
        inner, many = _inner(hints[field.name])
        if not isinstance(inner, type) or not attrs.has(inner):
            continue
        if shape.inline:
            found += nested_mismatches(inner, node, root)
            continue
        part = _resolved(node["properties"][shape.key or field.name], root)
        part = _resolved(part["items"], root) if many else part
        keys, required = document_keys(inner)
        if (
            set(keys) != set(part.get("properties", keys))
            or not set(part.get("required", ())) <= required
        ):
            found.append(
                f"{kind.__name__}.{field.name}: {keys} against {sorted(part.get('properties', ()))}"
            )
        found += nested_mismatches(inner, part, root)
    return found


@pytest.mark.parametrize(("kind", "name"), VIEW_SCHEMAS, ids=[name for _, name in VIEW_SCHEMAS])
def test_each_object_inside_a_view_has_its_schemas_keys(kind: type, name: str) -> None:
    found = schema(name)
    assert nested_mismatches(kind, found, found) == []


@pytest.mark.parametrize(("kind", "name"), VIEW_SCHEMAS, ids=[name for _, name in VIEW_SCHEMAS])
def test_a_view_type_has_exactly_its_schemas_keys_and_always_those_it_requires(
    kind: type, name: str
) -> None:
    keys, required = document_keys(kind)
    found = schema(name)
    assert len(keys) == len(set(keys)), f"{kind.__name__} writes a key twice: {keys}"
    assert set(keys) == set(found["properties"])
    # Every key the schema requires is one the type always writes.
    assert set(found.get("required", ())) <= required


class Colour(Enum):
    RED = "red"


@attrs.frozen(slots=True)
class Inner:
    depth: int


class Pair(typing.NamedTuple):
    left: int
    right: Colour


@attrs.frozen(slots=True)
class Sample:
    number: int = attrs.field(metadata=shaped(key="n"))
    note: str | None = attrs.field(metadata=shaped(omit_none=True))
    colour: Colour
    inner: Inner = attrs.field(metadata=shaped(inline=True))
    items: tuple[Inner, ...]
    table: dict[str, tuple[int, ...]]
    secret: str = attrs.field(metadata=shaped(skip=True))
    doubled: int = attrs.field(metadata=shaped(encode=lambda value: value * 2))
    pair: Pair


def test_the_converter_keeps_field_order_and_applies_each_fields_shape() -> None:
    sample = Sample(
        1, None, Colour.RED, Inner(2), (Inner(3),), {"a": (4,)}, "x", 5, Pair(6, Colour.RED)
    )
    document = json_form(sample)
    assert list(document) == ["n", "colour", "depth", "items", "table", "doubled", "pair"]
    assert document == {
        "n": 1,
        "colour": "red",
        "depth": 2,
        "items": [{"depth": 3}],
        "table": {"a": [4]},
        "doubled": 10,
        "pair": {"left": 6, "right": "red"},
    }
    assert json_form(attrs.evolve(sample, note="kept"))["note"] == "kept"
