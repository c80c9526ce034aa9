"""One converter from a view's value to its JSON form: every `--json` document and `runner serve`'s.

A view type is its document's source: its attrs fields, in order, are the document's keys (the
documents are printed unsorted, so the order is part of them). A field's metadata (`shaped`)
says what its plain form cannot: another key, no key when the value is None, an encoding of its
own, keys spread into the enclosing object, or no key at all. Never reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from functools import cache
from typing import Any

import attrs
from attrs import AttrsInstance

_META = "json_form"
# Text, numbers and None are their own form: checked first, as most values of a document are.
_PLAIN = frozenset({str, int, float, bool, type(None)})


@attrs.frozen(slots=True)
class Shape:
    key: str | None = None  # the document's key when it is not the field's name
    omit_none: bool = False  # no key at all when the value is None
    encode: Callable[[Any], Any] | None = None  # the value's form, when not the generic one
    inline: bool = False  # the value's keys spread into the enclosing object
    keys: tuple[str, ...] = ()  # an encoded inline value's keys (the schema test reads them)
    skip: bool = False  # not in the document


def shaped(**shape: Any) -> dict[str, Shape]:
    """A field's metadata: `attrs.field(metadata=shaped(key="iter"))`."""
    return {_META: Shape(**shape)}


def shape_of(field: attrs.Attribute[Any]) -> Shape:
    found = field.metadata.get(_META)
    return found if isinstance(found, Shape) else Shape()


@cache
def _plan(kind: type[AttrsInstance]) -> tuple[tuple[str, str, Shape], ...]:
    return tuple((f.name, shape_of(f).key or f.name, shape_of(f)) for f in attrs.fields(kind))


def json_form(value: Any) -> Any:
    """The JSON form of a value: an attrs value or a named tuple by its fields, an enum by its
    value, a mapping as an object, any other sequence than text as an array; text, numbers and
    None as they are."""
    kind: type[object] = type(value)
    if kind in _PLAIN:
        return value
    if attrs.has(kind):
        document: dict[str, Any] = {}
        for name, key, shape in _plan(kind):
            item = getattr(value, name)
            if shape.skip or (shape.omit_none and item is None):
                continue
            encoded = json_form(item) if shape.encode is None else shape.encode(item)
            if shape.inline:
                document.update(encoded)
            else:
                document[key] = encoded
        return document
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple: by its names
        return {name: json_form(item) for name, item in zip(value._fields, value, strict=True)}
    if isinstance(value, Mapping):
        return {key: json_form(item) for key, item in value.items()}
    if isinstance(value, Sequence):
        return [json_form(item) for item in value]
    raise TypeError(f"no JSON form for {type(value).__name__}")
