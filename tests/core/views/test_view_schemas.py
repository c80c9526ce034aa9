"""Each view type and its document's schema say the same keys: the type is the document's source
(runner_core/json_form.py), the schema under schemas/views/ documents it, and this one
table holds them together."""

from __future__ import annotations

import json
import typing
from enum import Enum
from importlib import resources
from typing import Any

import attrs
import pytest

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


def schema(name: str) -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath(f"views/{name}.schema.json")
    found: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return found


def document_keys(kind: type) -> tuple[list[str], set[str]]:
    """The keys a view type's document has, in order, and those it always has."""
    keys: list[str] = []
    required: set[str] = set()
    hints = typing.get_type_hints(kind)
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


def test_the_converter_keeps_field_order_and_applies_each_fields_shape() -> None:
    sample = Sample(1, None, Colour.RED, Inner(2), (Inner(3),), {"a": (4,)}, "x", 5)
    document = json_form(sample)
    assert list(document) == ["n", "colour", "depth", "items", "table", "doubled"]
    assert document == {
        "n": 1,
        "colour": "red",
        "depth": 2,
        "items": [{"depth": 3}],
        "table": {"a": [4]},
        "doubled": 10,
    }
    assert json_form(attrs.evolve(sample, note="kept"))["note"] == "kept"
