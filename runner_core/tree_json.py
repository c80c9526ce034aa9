"""The task tree as JSON text: parsing, building and the canonical form (SPEC §3).

Decides what text a tree reads from and the exact bytes it is written as: siblings sorted by
`(order, id)`, 2-space indent, keys in the schema's field order, trailing newline. Never touches
a file; every walk is iterative, so a 10,000-deep chain is as welcome as a flat tree.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import Any

from runner_core.invariants import validate_invariants
from runner_core.model import NODE_FIELDS, Node, NodeNext, sort_children
from runner_core.schema import validate_schema

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
    out: list[str] = []
    # Items are nodes to open or text to emit; nodes come with their depth and trailing comma.
    stack: list[tuple[Node, int, str] | str] = [(sort_children(tree), 0, "")]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, depth, comma = item
        pad = "  " * depth
        field = pad + "  "
        if node.acceptance:
            items = ",\n".join(field + "  " + encode_basestring(a) for a in node.acceptance)
            acceptance = f"[\n{items}\n{field}]"
        else:
            acceptance = "[]"
        out.append(
            f"{pad}{{\n"
            f'{field}"id": {encode_basestring(node.id)},\n'
            f'{field}"order": {node.order},\n'
            f'{field}"title": {encode_basestring(node.title)},\n'
            f'{field}"goal": {encode_basestring(node.goal)},\n'
            f'{field}"acceptance": {acceptance},\n'
            f'{field}"next": "{node.next.value}",\n'
            f'{field}"passes": {"true" if node.passes else "false"},\n'
            f'{field}"attempts": {node.attempts},\n'
            f'{field}"max_attempts": {node.max_attempts},\n'
        )
        if not node.children:
            out.append(f'{field}"children": []\n{pad}}}{comma}\n')
            continue
        out.append(f'{field}"children": [\n')
        stack.append(f"{field}]\n{pad}}}{comma}\n")
        last = len(node.children) - 1
        stack.extend(
            (child, depth + 2, "" if i == last else ",")
            for i, child in reversed(list(enumerate(node.children)))
        )
    return "".join(out)


# ---------------------------------------------------------------- the loading pipeline


def decode_tree_text(text: str | bytes) -> Any:
    """JSON data of a tree file, or `TreeValidationError` naming why it is not JSON."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TreeValidationError(
                "json", (f"not UTF-8 (byte {error.start}: {error.reason})",)
            ) from None
    if not text.strip():
        raise TreeValidationError("json", ("the file is empty",))
    try:
        return loads_json(text)
    except json.JSONDecodeError as error:
        raise TreeValidationError(
            "json", (f"{error.msg} at line {error.lineno} column {error.colno}",)
        ) from None


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
    """Text of a tree file → a valid immutable tree (parse → schema → invariants)."""
    return tree_from_valid_json(decode_tree_text(text))
