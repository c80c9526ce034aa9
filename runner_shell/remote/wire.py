"""The core's values as canonical JSON, to send a job's facts to a worker and its machine back.

Every value of an iteration (its facts, its machine, its events) is built of runner_core's attrs
classes and enums, pyrsistent collections, tuples and plain JSON values; `encode` writes each
with a tag naming its kind, `decode` builds it again. Decoding builds only runner_core's own
attrs classes and enums, through their constructors (their validators run): a worker's answer
names no other code, and whatever it holds fails as a WireError, never as another exception.
Same value, same bytes (`dumps` sorts keys, maps are sorted by key).
"""

from __future__ import annotations

import base64
import enum
import importlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from runner_core.json_text import json_value

_CORE = "runner_core."
# The names a document may give a class by: a module of runner_core (never its test helpers)
# and a class's qualified name in it. Nothing else is imported.
_MODULE = re.compile(r"runner_core(\.[a-z][a-z0-9_]*)+")
_QUALNAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")
_TEST_HELPERS = "runner_core.testing."


class WireError(ValueError):
    """A document that is not an encoded core value: its line names the first thing wrong."""


def encode(value: object) -> object:
    """`value` as a JSON value; TypeError for a kind the wire does not carry."""
    if isinstance(value, enum.Enum):  # before str and int: a StrEnum is a str
        return {"$enum": _name(type(value)), "v": encode(value.value)}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"$float": repr(value)}
    if attrs.has(type(value)):
        fields = attrs.fields(type(value))  # type: ignore[arg-type]
        named = {f.alias: encode(getattr(value, f.name)) for f in fields if f.init}
        return {"$attrs": _name(type(value)), "f": named}
    return _encode_collection(value)


def _encode_collection(value: object) -> object:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, tuple):
        return {"$tuple": [encode(item) for item in value]}
    if isinstance(value, PVector):
        return {"$pvector": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, PMap | dict):
        kind = "$pmap" if isinstance(value, PMap) else "$dict"
        pairs = [[encode(k), encode(v)] for k, v in value.items()]
        return {kind: sorted(pairs, key=_sort_key)}
    if isinstance(value, PSet | frozenset):
        kind = "$pset" if isinstance(value, PSet) else "$frozenset"
        return {kind: sorted((encode(item) for item in value), key=_sort_key)}
    raise TypeError(f"the wire does not carry a {type(value).__name__}")


def _sort_key(item: object) -> str:
    return json.dumps(item, sort_keys=True)


def _name(cls: type) -> str:
    if not cls.__module__.startswith(_CORE):
        raise TypeError(f"the wire carries runner_core's classes only, not {cls.__qualname__}")
    return f"{cls.__module__}:{cls.__qualname__}"


def dumps(value: object) -> str:
    """`value` encoded, as canonical JSON text."""
    return json.dumps(encode(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str, expected: type[Any]) -> Any:
    """The value `text` encodes, which must be an `expected`; WireError otherwise."""
    try:
        value = decode(json_value(text))
    except ValueError as error:  # a WireError is one
        raise WireError(f"not an encoded {expected.__name__}: {error}") from None
    if not isinstance(value, expected):
        raise WireError(f"not an encoded {expected.__name__}: a {type(value).__name__}")
    return value


def decode(document: object) -> object:
    """The value `document` (from `encode`) stands for; WireError for anything else."""
    try:
        return _decode(document)
    except WireError:
        raise
    except RecursionError:
        raise WireError("nested deeper than any encoded value") from None
    except (ValueError, TypeError, AttributeError, KeyError) as error:
        raise WireError(f"{type(error).__name__}: {error}") from None


def _decode(document: object) -> object:
    if document is None or isinstance(document, bool | int | str):
        return document
    if isinstance(document, list):
        return [_decode(item) for item in document]
    if not isinstance(document, dict) or len(document) not in (1, 2):
        raise WireError(f"unexpected {type(document).__name__} in an encoded value")
    tag = next(iter(sorted(document)))
    build = _DECODERS.get(tag)
    if build is None:
        raise WireError(f"unknown tag {tag!r}")
    if document.keys() != _KEYS.get(tag, {tag}):
        raise WireError(f"{tag}: unexpected keys {sorted(document)}")
    return build(document)


def _attrs(document: dict[str, Any]) -> object:
    cls = _core_class(document["$attrs"])
    if not attrs.has(cls):
        raise WireError(f"{document['$attrs']} is not an attrs class")
    fields: Mapping[str, object] = document["f"]
    if not isinstance(fields, dict):
        raise WireError(f"{document['$attrs']}: fields are not an object")
    values = {name: _decode(value) for name, value in fields.items()}
    try:
        return cls(**values)
    except Exception as error:  # whatever its constructor refuses, the document is not one
        raise WireError(f"{document['$attrs']}: {type(error).__name__}: {error}") from None


def _enum(document: dict[str, Any]) -> object:
    cls = _core_class(document["$enum"])
    if not issubclass(cls, enum.Enum):
        raise WireError(f"{document['$enum']} is not an enum")
    return cls(_decode(document["v"]))


def _core_class(name: object) -> type:
    module_name, _, qualname = name.partition(":") if isinstance(name, str) else ("", "", "")
    if (
        not _MODULE.fullmatch(module_name)
        or not _QUALNAME.fullmatch(qualname)
        or f"{module_name}.".startswith(_TEST_HELPERS)
    ):
        raise WireError(f"not a runner_core class: {name!r}")
    try:
        found: object = importlib.import_module(module_name)
    except ImportError:
        raise WireError(f"not a runner_core class: {name}") from None
    for part in qualname.split("."):
        found = getattr(found, part)
    if not isinstance(found, type) or not found.__module__.startswith(_CORE):
        raise WireError(f"not a runner_core class: {name}")
    return found


def _items(document: dict[str, Any], tag: str) -> list[object]:
    items = document[tag]
    if not isinstance(items, list):
        raise WireError(f"{tag}: not a list")
    return [_decode(item) for item in items]


def _pairs(document: dict[str, Any], tag: str) -> list[tuple[Any, object]]:
    pairs = document[tag]
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise WireError(f"{tag}: not a list of pairs")
    return [(_decode(k), _decode(v)) for k, v in pairs]


# The keys of the documents of the tags that hold more than their tag.
_KEYS: Mapping[str, set[str]] = {"$attrs": {"$attrs", "f"}, "$enum": {"$enum", "v"}}
_DECODERS: Mapping[str, Callable[[dict[str, Any]], object]] = {
    "$attrs": _attrs,
    "$enum": _enum,
    "$float": lambda d: float(d["$float"]),
    "$bytes": lambda d: base64.b64decode(d["$bytes"], validate=True),
    "$tuple": lambda d: tuple(_items(d, "$tuple")),
    "$pvector": lambda d: pvector(_items(d, "$pvector")),
    "$pmap": lambda d: pmap(dict(_pairs(d, "$pmap"))),
    "$dict": lambda d: dict(_pairs(d, "$dict")),
    "$pset": lambda d: pset(_items(d, "$pset")),
    "$frozenset": lambda d: frozenset(_items(d, "$frozenset")),
}
