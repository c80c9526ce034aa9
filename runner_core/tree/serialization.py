"""The task tree as JSON text: parsing, building and the canonical form.

Decides what text a tree reads from and the exact bytes it is written as: siblings sorted by
`(order, id)`, 2-space indent, keys in the schema's field order, trailing newline. Also decides
which JSON the runner refuses to read at all (duplicate keys, nesting deeper than the reader
can follow). Never touches a file. How a field is read and written follows from its type in
`Node`; the node's shape is checked only by the schema (and code generated from it), and
reading a valid tree, the schema and the invariants checked, is `runner_core.validation.loading`.
"""

from __future__ import annotations

import enum
import functools
import json
import operator
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.json_text import TOO_DEEP, TooDeep, json_value
from runner_core.tree import _node_validator as _tree_node
from runner_core.tree.bounds import TREE_MAX_BYTES as TREE_MAX_BYTES
from runner_core.tree.model import (
    MAX_DEPTH,
    NODE_FIELDS,
    Node,
    NodeNext,
    TreeLayer,
    in_canonical_order,
    set_node_fields,
    trusted_node,
)
from runner_core.tree.plain import SURROGATE_ESCAPE as _SURROGATE_ESCAPE

# A read-only mapping rather than a pmap: importing pyrsistent would cost every command that
# reads a tree ~3 ms of start-up (measured with -X importtime), for a table of three entries.
_LAYER_PREFIX: Mapping[TreeLayer, str] = MappingProxyType(
    {
        "json": "tree is not valid JSON",
        "schema": "tree schema validation failed",
        "invariants": "tree invariants failed",
    }
)


class TreeValidationError(ValueError):
    """A tree that cannot be used: `layer` is "json", "schema" or "invariants", `errors` the
    layer's sorted errors, and `str()` the one line the runner prints for it."""

    def __init__(self, layer: TreeLayer, errors: tuple[str, ...]) -> None:
        self.layer: TreeLayer = layer
        self.errors = errors
        super().__init__(f"{_LAYER_PREFIX[layer]}: {'; '.join(errors)}")


# ---------------------------------------------------------------- reading text

_TREE_TOO_DEEP = f"{TOO_DEEP} (a tree is at most {MAX_DEPTH} levels deep)"
_SHOWN_KEY_LENGTH = 100


class RefusedJson(ValueError):
    """Syntactically fine JSON the runner will not read: a duplicate key, or nested too deep."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key[:_SHOWN_KEY_LENGTH])
                raise RefusedJson(f"duplicate key {shown} in an object")
            seen.add(key)
    return obj


def loads_json(text: str) -> Any:
    """`json.loads`, refusing duplicate keys and deep nesting with a `RefusedJson` line."""
    try:
        return json_value(text, object_pairs_hook=_unique_keys)
    except TooDeep:
        raise RefusedJson(TOO_DEEP) from None


def loads_json_strictly(text: str) -> Any:
    """`loads_json` for text the runner will write back: every string valid Unicode.

    Raises `json.JSONDecodeError` for bad syntax, `RefusedJson` for JSON the runner will not
    read, and `ValueError` naming the JSON path of a string holding an unpaired surrogate
    (UTF-8 cannot encode it) or a number too long to read.
    """
    try:
        value = loads_json(text)
    except (json.JSONDecodeError, RefusedJson):
        raise
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits()
        raise ValueError("a number has too many digits to be read") from None
    if _SURROGATE_ESCAPE.search(text):
        try:
            path = _unpaired_surrogate_path(value, "$")
        except RecursionError:
            raise RefusedJson(TOO_DEEP) from None
        if path is not None:
            raise ValueError(f"{path} holds an unpaired surrogate escape; strings must be Unicode")
    return value


def _is_unicode(text: str) -> bool:
    if text.isascii():  # O(1): CPython records it when it makes the string
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unpaired_surrogate_path(item: Any, path: str) -> str | None:
    if isinstance(item, str):
        return None if _is_unicode(item) else path
    children: Iterator[tuple[str, Any]]
    if isinstance(item, dict):
        if not all(map(_is_unicode, item)):
            return path
        children = ((f"{path}.{key}", child) for key, child in item.items())
    elif isinstance(item, list):
        children = ((f"{path}[{index}]", child) for index, child in enumerate(item))
    else:
        return None
    for child_path, child in children:
        found = _unpaired_surrogate_path(child, child_path)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------- objects <-> nodes
# Each field is read with its type's constructor (an `order` of 1.0 becomes 1, a `next` of
# "execute" becomes NodeNext.EXECUTE) and written back as JSON's own kind of value.

_FIELD_TYPES: Mapping[str, Any] = MappingProxyType(typing.get_type_hints(Node))
_OWN_FIELDS = tuple(name for name in NODE_FIELDS if name != "children")
_own_values = operator.attrgetter(*_OWN_FIELDS)


def _reader(kind: Any) -> Callable[[Any], Any]:
    return tuple if typing.get_origin(kind) is tuple else typing.cast(Callable[[Any], Any], kind)


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value.value if isinstance(value, enum.Enum) else value


_READERS = tuple((name, _reader(_FIELD_TYPES[name])) for name in _OWN_FIELDS)


def tree_of_schema_valid(obj: Any) -> Node:
    """`tree_from_json` of data the schema has accepted: each field read with its type's
    constructor (an `order` of 1.0 becomes 1), without checking the node again."""
    return trusted_node(
        *[read(obj[name]) for name, read in _READERS],
        tuple([tree_of_schema_valid(child) for child in obj["children"]]),
    )


def tree_to_json(tree: Node) -> dict[str, Any]:
    """The tree as plain JSON data, keys in the schema's field order, siblings as stored."""
    own = {
        name: _json_value(value) for name, value in zip(_OWN_FIELDS, _own_values(tree), strict=True)
    }
    return {**own, "children": [tree_to_json(child) for child in tree.children]}


# ---------------------------------------------------------------- the canonical text


@attrs.frozen(slots=True)
class _Layout:
    """The fixed text around a node's values at one depth of the canonical form."""

    prefixes: tuple[str, ...]  # before each field but the children: indentation and key
    array: Callable[[Sequence[str]], str]
    leaf_end: tuple[str, str]  # indexed by "is the last of its siblings"
    children_open: str
    children_close: tuple[str, str]


def _layout(depth: int) -> _Layout:
    pad = "  " * (2 * depth)
    field_pad = pad + "  "
    children = f',\n{field_pad}"children": '
    return _Layout(
        prefixes=tuple(
            f'{pad}{{\n{field_pad}"{name}": ' if index == 0 else f',\n{field_pad}"{name}": '
            for index, name in enumerate(_OWN_FIELDS)
        ),
        array=functools.partial(_json_array, pad=field_pad),
        leaf_end=(f"{children}[]\n{pad}}},\n", f"{children}[]\n{pad}}}\n"),
        children_open=f"{children}[\n",
        children_close=(f"{field_pad}]\n{pad}}},\n", f"{field_pad}]\n{pad}}}\n"),
    )


def _json_array(items: Sequence[str], pad: str) -> str:
    inner = f",\n{pad}  ".join(map(encode_basestring, items))
    return f"[\n{pad}  {inner}\n{pad}]"


# Generated from the schema's node definition by scripts/gen_validators.py.
_node_text: Callable[
    [Node, tuple[str, ...], Callable[[Sequence[str]], str], Callable[[str], str], str], str
] = _tree_node.canonical_node_text

# One layout per depth, computed once, when a tree that deep is first written: the commands
# that only read a tree import this module too, and write nothing.
_layout_at = functools.cache(_layout)


def _write(node: Node, depth: int, last: bool, emit: Callable[[str], object]) -> None:
    """Emit the canonical text of `node` in pieces: one per node, one per closing array.

    Siblings are put in canonical order as they are reached: `sort_children` without a walk
    of its own. Leaves, most of any tree, are written in their parent's loop.
    """
    layout = _layout_at(depth)
    children = node.children
    if not children:
        emit(
            _node_text(
                node, layout.prefixes, layout.array, encode_basestring, layout.leaf_end[last]
            )
        )
        return
    emit(_node_text(node, layout.prefixes, layout.array, encode_basestring, layout.children_open))
    if len(children) > 1:
        children = in_canonical_order(children)
    below = depth + 1
    inner = _layout_at(below)
    for index, child in enumerate(children, 1 - len(children)):  # 0 at the last child
        if child.children:
            _write(child, below, not index, emit)
        else:
            end = inner.leaf_end[not index]
            emit(_node_text(child, inner.prefixes, inner.array, encode_basestring, end))
    emit(layout.children_close[last])


def dumps_tree(tree: Node) -> str:
    """The canonical text of a tree: what `json.dumps(indent=2)` of its sorted form prints."""
    pieces: list[str] = []
    _write(tree, 0, True, pieces.append)
    return "".join(pieces)


class _TooLarge(Exception):
    pass


def canonical_fits(tree: Node, limit: int = TREE_MAX_BYTES) -> bool:
    """Whether the canonical text of `tree` is at most `limit` UTF-8 bytes.

    Stops at the limit, so a tree whose canonical form would take gigabytes (indentation grows
    with depth) is refused in the time it takes to reach the limit.
    """
    size = 0

    def count(piece: str) -> None:
        nonlocal size
        size += len(piece) if piece.isascii() else len(piece.encode("utf-8"))
        if size > limit:
            raise _TooLarge

    try:
        _write(tree, 0, True, count)
    except _TooLarge:
        return False
    return True


# ---------------------------------------------------------------- the loading pipeline


def decode_tree_text(text: str | bytes) -> Any:
    """JSON data of a tree file, or `TreeValidationError` naming why it is not JSON."""
    return json_of(tree_text(text))


def tree_text(text: str | bytes) -> str:
    """The text JSON is read from: UTF-8 decoded, Unicode, not blank."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TreeValidationError(
                "json", (f"not UTF-8 (byte {error.start}: {error.reason})",)
            ) from None
    elif not _is_unicode(text):
        raise TreeValidationError("json", ("the text holds unpaired surrogates",))
    if not text or text.isspace():  # `not text.strip()`, without copying the text
        raise TreeValidationError("json", ("the file is empty",))
    return text


def too_deep() -> TreeValidationError:
    """The error of a tree nested deeper than the reader can follow."""
    return TreeValidationError("json", (_TREE_TOO_DEEP,))


def json_of(text: str) -> Any:
    """JSON data of a tree file's decoded text, or `TreeValidationError` naming why it is not
    JSON the runner reads."""
    try:
        return loads_json_strictly(text)
    except json.JSONDecodeError as error:
        raise TreeValidationError(
            "json", (f"{error.msg} at line {error.lineno} column {error.colno}",)
        ) from None
    except RefusedJson as error:
        raise (
            too_deep() if str(error) == TOO_DEEP else TreeValidationError("json", (str(error),))
        ) from None
    except ValueError as error:
        raise TreeValidationError("json", (str(error),)) from None


# ---------------------------------------------------------------- the one-pass fast path
# Sound, not complete: `plain_node` (generated from the schema by scripts/gen_validators.py)
# accepts only nodes the schema accepts, with keys in the canonical order, and gives up on
# anything else (another key order, a float `order` of 1.0, a duplicate key), which the full
# path reads or refuses.


class _NotPlainNode(Exception):
    """Raised from inside the JSON decoder to leave the fast path."""


_ENUM_MEMBERS = MappingProxyType(
    {"next": MappingProxyType({member.value: member for member in NodeNext})}
)


_plain_node_reader: Callable[..., Callable[[list[tuple[str, Any]]], Node]] = (
    _tree_node.plain_node_reader
)
_node_of = _plain_node_reader(Node, set_node_fields, _ENUM_MEMBERS, _NotPlainNode)


def tree_of_plain_nodes(text: str) -> Node | None:
    """The tree when every JSON object in `text` is a plain valid node, else None."""
    if "\\" in text and _SURROGATE_ESCAPE.search(text) is not None:
        return None  # a string may hold a lone surrogate: the full path names it
    try:
        root = json.loads(text, object_pairs_hook=_node_of)
    except (_NotPlainNode, ValueError):
        return None
    except RecursionError:
        raise too_deep() from None
    return root if type(root) is Node else None
