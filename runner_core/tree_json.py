"""The task tree as JSON text: parsing, building and the canonical form (SPEC §3).

Decides what text a tree reads from and the exact bytes it is written as: siblings sorted by
`(order, id)`, 2-space indent, keys in the schema's field order, trailing newline. Never touches
a file; every walk is iterative, so a 10,000-deep chain is as welcome as a flat tree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import Any

import attrs

from runner_core.invariants import validate_invariants
from runner_core.model import NODE_FIELDS, Node, NodeNext, in_canonical_order
from runner_core.schema import validate_schema

# The largest tree text the runner reads, and so the largest it writes: a tree whose canonical
# form is bigger could never be read back. Depth is not limited, but canonical indentation grows
# with it (a compact 10,000-deep chain of ~1.4 MB is ~3 GB canonically), so such a tree can be
# validated and selected from, never rewritten.
TREE_MAX_BYTES = 128 * 1024 * 1024

_LAYER_PREFIX = {
    "json": "tree is not valid JSON",
    "schema": "tree schema validation failed",
    "invariants": "tree invariants failed",
}


class TreeValidationError(ValueError):
    """A tree that cannot be used; `str()` is the contract line of SPEC §4."""

    def __init__(self, layer: str, errors: tuple[str, ...]) -> None:
        self.layer = layer
        self.errors = errors
        super().__init__(f"{_LAYER_PREFIX[layer]}: {'; '.join(errors)}")


# ---------------------------------------------------------------- reading text


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


def loads_json(text: str) -> Any:
    """`json.loads`, falling back to an iterative parser for documents nested too deep."""
    try:
        return json.loads(text)
    except RecursionError:
        return _loads_iteratively(text)


# `\uD800`-`\uDFFF` escapes: the only way an unpaired surrogate gets into decoded UTF-8 text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads_json_strictly(text: str) -> Any:
    """`loads_json` for text the runner will write back: every string valid Unicode.

    Raises `json.JSONDecodeError` for bad syntax and `ValueError` naming the JSON path of a
    string holding an unpaired surrogate (UTF-8 cannot encode it) or a number too long to read.
    """
    try:
        value = loads_json(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits()
        raise ValueError("a number has too many digits to be read") from None
    if _SURROGATE_ESCAPE.search(text):
        path = _unpaired_surrogate_path(value)
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


def _unpaired_surrogate_path(value: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and not _is_unicode(item):
            return path
        if isinstance(item, dict):
            for key, child in item.items():
                if not _is_unicode(key):
                    return path
                stack.append((child, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
    return None


def _loads_iteratively(text: str) -> Any:
    """A strict RFC 8259 parser with an explicit stack; same results as `json.loads`."""
    # Each open container is [value, pending key or None].
    stack: list[list[Any]] = []
    pos = _WHITESPACE.match(text, 0).end()  # type: ignore[union-attr]
    result: Any = None
    have_result = False

    def fail(message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, text, pos)

    while True:
        if pos >= len(text):
            raise fail("Expecting value")
        char = text[pos]
        value: Any
        opened = False
        if char == "{":
            value, opened = {}, True
            pos += 1
        elif char == "[":
            value, opened = [], True
            pos += 1
        elif char == '"':
            value, pos = scanstring(text, pos + 1, True)
        else:
            number = _NUMBER.match(text, pos)
            literal = next((word for word in _LITERALS if text.startswith(word, pos)), None)
            if number:
                token = number.group()
                value = float(token) if number.group(1) or number.group(2) else int(token)
                pos = number.end()
            elif literal is not None:
                value = _LITERALS[literal]
                pos += len(literal)
            else:
                raise fail("Expecting value")
        if opened:
            stack.append([value, None])
            pos = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]
            closing = "}" if isinstance(value, dict) else "]"
            if text.startswith(closing, pos):
                stack.pop()
                pos += 1
            elif isinstance(value, dict):
                pos = _read_key(text, pos, stack[-1])
                continue
            else:
                continue
        # A complete value: attach it and close every container that ends here.
        while True:
            if not stack:
                result, have_result = value, True
                break
            container = stack[-1]
            if isinstance(container[0], dict):
                container[0][container[1]] = value
            else:
                container[0].append(value)
            pos = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]
            closing = "}" if isinstance(container[0], dict) else "]"
            if text.startswith(",", pos):
                pos = _WHITESPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(container[0], dict):
                    pos = _read_key(text, pos, container)
                break
            if text.startswith(closing, pos):
                pos += 1
                value = stack.pop()[0]
                continue
            raise fail(f"Expecting ',' delimiter or '{closing}'")
        if have_result:
            pos = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos != len(text):
                raise fail("Extra data")
            return result


def _read_key(text: str, pos: int, container: list[Any]) -> int:
    if not text.startswith('"', pos):
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = scanstring(text, pos + 1, True)
    pos = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]
    if not text.startswith(":", pos):
        raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
    container[1] = key
    return _WHITESPACE.match(text, pos + 1).end()  # type: ignore[union-attr]


# ---------------------------------------------------------------- objects <-> nodes


def tree_from_json(obj: Any) -> Node:
    """Build a `Node` from a schema-valid JSON object, keeping siblings in the given order."""
    stack: list[tuple[dict[str, Any], bool]] = [(obj, False)]
    built: list[Node] = []
    while stack:
        item, children_ready = stack.pop()
        children_json = item["children"]
        if not children_ready:
            stack.append((item, True))
            stack.extend((child, False) for child in reversed(children_json))
            continue
        count = len(children_json)
        children = tuple(built[len(built) - count :]) if count else ()
        if count:
            del built[len(built) - count :]
        built.append(
            Node(
                item["id"],
                int(item["order"]),
                item["title"],
                item["goal"],
                tuple(item["acceptance"]),
                NodeNext(item["next"]),
                item["passes"],
                int(item["attempts"]),
                int(item["max_attempts"]),
                children,
            )
        )
    return built[0]


def _own_json(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "order": node.order,
        "title": node.title,
        "goal": node.goal,
        "acceptance": list(node.acceptance),
        "next": node.next.value,
        "passes": node.passes,
        "attempts": node.attempts,
        "max_attempts": node.max_attempts,
    }


def tree_to_json(tree: Node) -> dict[str, Any]:
    """The tree as plain JSON data, keys in the schema's field order, siblings as stored."""
    result: dict[str, Any] = {}
    stack: list[tuple[Node, dict[str, Any]]] = [(tree, result)]
    while stack:
        node, target = stack.pop()
        target.update(_own_json(node))
        children: list[dict[str, Any]] = [{} for _ in node.children]
        target["children"] = children
        stack.extend(zip(node.children, children, strict=True))
    assert tuple(result) == NODE_FIELDS
    return result


def dumps_tree(tree: Node) -> str:
    """The canonical text of a tree: what `json.dumps(indent=2)` of its sorted form prints."""
    return "".join(_canonical_pieces(tree))


def canonical_fits(tree: Node, limit: int = TREE_MAX_BYTES) -> bool:
    """Whether the canonical text of `tree` is at most `limit` UTF-8 bytes.

    Stops counting at the limit, so a tree whose canonical form would take gigabytes (a deep
    chain: indentation grows with depth) is refused in the time it takes to reach the limit.
    """
    size = 0
    for piece in _canonical_pieces(tree):
        size += len(piece) if piece.isascii() else len(piece.encode("utf-8"))
        if size > limit:
            return False
    return True


@attrs.frozen(slots=True)
class _Layout:
    """The fixed text around a node's values at one depth of the canonical form."""

    head: str
    order: str
    title: str
    goal: str
    acceptance: str
    items_open: str
    items_separator: str
    items_close: str
    next: str
    passes: str
    attempts: str
    max_attempts: str
    leaf_end: tuple[str, str]  # (followed by a sibling, last)
    children_open: str
    children_close: tuple[str, str]


def _layout(depth: int) -> _Layout:
    pad = "  " * (2 * depth)
    field = pad + "  "
    return _Layout(
        head=f'{pad}{{\n{field}"id": ',
        order=f',\n{field}"order": ',
        title=f',\n{field}"title": ',
        goal=f',\n{field}"goal": ',
        acceptance=f',\n{field}"acceptance": ',
        items_open=f"[\n{field}  ",
        items_separator=f",\n{field}  ",
        items_close=f"\n{field}]",
        next=f',\n{field}"next": ',
        passes=f',\n{field}"passes": ',
        attempts=f',\n{field}"attempts": ',
        max_attempts=f',\n{field}"max_attempts": ',
        leaf_end=(f',\n{field}"children": []\n{pad}}},\n', f',\n{field}"children": []\n{pad}}}\n'),
        children_open=f',\n{field}"children": [\n',
        children_close=(f"{field}]\n{pad}}},\n", f"{field}]\n{pad}}}\n"),
    )


def _canonical_pieces(tree: Node) -> Iterator[str]:
    # The text is built from each depth's fixed pieces, computed once per depth, with a
    # node's values between them: one string per node and one per closing children array.
    layouts: list[_Layout] = []
    # Items are nodes to open, with their depth and whether they are last, or text to emit.
    # Siblings are put in canonical order as they are reached, which is `sort_children`
    # without a walk of its own.
    stack: list[tuple[Node, int, bool] | str] = [(tree, 0, True)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            continue
        node, depth, last = item
        if depth == len(layouts):
            layouts.append(_layout(depth))
        layout = layouts[depth]
        if node.acceptance:
            lines = layout.items_separator.join(map(encode_basestring, node.acceptance))
            acceptance = f"{layout.items_open}{lines}{layout.items_close}"
        else:
            acceptance = "[]"
        next_text = _EXECUTE_TEXT if node.next is NodeNext.EXECUTE else f'"{node.next.value}"'
        children = node.children
        if len(children) > 1:
            children = in_canonical_order(children)
        end = layout.children_open if children else layout.leaf_end[last]
        yield (
            f"{layout.head}{encode_basestring(node.id)}"
            f"{layout.order}{node.order}"
            f"{layout.title}{encode_basestring(node.title)}"
            f"{layout.goal}{encode_basestring(node.goal)}"
            f"{layout.acceptance}{acceptance}"
            f"{layout.next}{next_text}"
            f"{layout.passes}{'true' if node.passes else 'false'}"
            f"{layout.attempts}{node.attempts}"
            f"{layout.max_attempts}{node.max_attempts}{end}"
        )
        if children:
            stack.append(layout.children_close[last])
            below = depth + 1
            stack.append((children[-1], below, True))
            stack.extend([(child, below, False) for child in children[-2::-1]])


_EXECUTE_TEXT = f'"{NodeNext.EXECUTE.value}"'


# ---------------------------------------------------------------- the loading pipeline


def decode_tree_text(text: str | bytes) -> Any:
    """JSON data of a tree file, or `TreeValidationError` naming why it is not JSON."""
    return _json_of(_tree_text(text))


def _tree_text(text: str | bytes) -> str:
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


def _json_of(text: str) -> Any:
    try:
        return loads_json_strictly(text)
    except json.JSONDecodeError as error:
        raise TreeValidationError(
            "json", (f"{error.msg} at line {error.lineno} column {error.colno}",)
        ) from None
    except ValueError as error:
        raise TreeValidationError("json", (str(error),)) from None


def tree_from_valid_json(obj: Any) -> Node:
    """schema → build → invariants, raising `TreeValidationError` at the first failing layer."""
    schema_errors = validate_schema(obj)
    if schema_errors:
        raise TreeValidationError("schema", schema_errors)
    tree = tree_from_json(obj)
    invariant_errors = validate_invariants(tree)
    if invariant_errors:
        raise TreeValidationError("invariants", invariant_errors)
    return tree


def parse_tree(text: str | bytes) -> Node:
    """Text of a tree file → a valid immutable tree (parse → schema → invariants).

    A tree the schema plainly accepts is built while its JSON is decoded, in one pass and
    without keeping the decoded objects; anything else takes the layer-by-layer path, which
    alone words the errors. Both give the same tree or the same error.
    """
    decoded = _tree_text(text)
    tree = _tree_of_plain_nodes(decoded)
    if tree is None:
        return tree_from_valid_json(_json_of(decoded))
    invariant_errors = validate_invariants(tree)
    if invariant_errors:
        raise TreeValidationError("invariants", invariant_errors)
    return tree


# ---------------------------------------------------------------- the one-pass fast path
# Sound, not complete: `_node_of` accepts only what schemas/task_tree/v1.schema.json accepts
# (tests/test_tree_fast_path.py pins the schema it was written for) and gives up on anything
# unusual, such as a float `order` of 1.0, which the schema accepts and the full path handles.


class _NotPlainNode(Exception):
    """Raised from inside the JSON decoder to leave the fast path."""


_NEXT_BY_VALUE = {member.value: member for member in NodeNext}


def _node_of(obj: dict[str, Any]) -> Node:
    """The node of a JSON object of exactly the schema's node shape, children already built."""
    if len(obj) != len(NODE_FIELDS):
        raise _NotPlainNode
    try:
        node_id = obj["id"]
        order = obj["order"]
        title = obj["title"]
        goal = obj["goal"]
        acceptance = obj["acceptance"]
        next_value = obj["next"]
        passes = obj["passes"]
        attempts = obj["attempts"]
        max_attempts = obj["max_attempts"]
        children = obj["children"]
    except KeyError:
        raise _NotPlainNode from None
    # `type() is` rather than isinstance: a bool is no integer here, as in the schema.
    if not (
        type(node_id) is str
        and node_id
        and type(order) is int
        and type(title) is str
        and type(goal) is str
        and type(next_value) is str
        and next_value in _NEXT_BY_VALUE
        and type(passes) is bool
        and type(attempts) is int
        and attempts >= 0
        and type(max_attempts) is int
        and max_attempts >= 0
        and type(acceptance) is list
        and type(children) is list
    ):
        raise _NotPlainNode
    for line in acceptance:
        if type(line) is not str:
            raise _NotPlainNode
    for child in children:
        # Every JSON object became a Node or ended the fast path, so a Node child is valid.
        if type(child) is not Node:
            raise _NotPlainNode
    return Node(
        node_id,
        order,
        title,
        goal,
        tuple(acceptance),
        _NEXT_BY_VALUE[next_value],
        passes,
        attempts,
        max_attempts,
        tuple(children),
    )


def _unicode_node_of(obj: dict[str, Any]) -> Node:
    """`_node_of`, also refusing strings that are not valid Unicode (`loads_json_strictly`)."""
    node = _node_of(obj)
    if not all(map(_is_unicode, (node.id, node.title, node.goal, *node.acceptance))):
        raise _NotPlainNode
    return node


def _tree_of_plain_nodes(text: str) -> Node | None:
    """The tree when every JSON object in `text` is a plain valid node, else None."""
    # Only a `\uD800`-`\uDFFF` escape can put a lone surrogate into a string of valid text.
    escaped_surrogates = "\\" in text and _SURROGATE_ESCAPE.search(text) is not None
    try:
        root = json.loads(text, object_hook=_unicode_node_of if escaped_surrogates else _node_of)
    except (_NotPlainNode, ValueError, RecursionError):
        return None
    return root if type(root) is Node else None
