"""Specification of the task tree as JSON text: reading, the canonical form, depth."""

from __future__ import annotations

import json
import time

import pytest

from runner_core import (
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    SelectionStatus,
    TreeValidationError,
    apply_state_updates,
    count_nodes,
    dumps_tree,
    parse_tree,
    select_leaf,
    tree_from_json,
    tree_to_json,
)
from runner_core.tree.model import NODE_FIELDS, TreeLayer, sort_children
from runner_core.tree.serialization import RefusedJson, decode_tree_text, loads_json
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.schema import TREE_SCHEMA_FILE, load_schema
from tests.helpers.trees import chain_json, chain_text, depth_of, ids, node, text_of, tree

SCHEMA_FIELD_ORDER = [
    "id",
    "order",
    "title",
    "goal",
    "acceptance",
    "next",
    "passes",
    "attempts",
    "max_attempts",
    "children",
]


def reference_canonical_text(root: Node) -> str:
    """The canonical form in one line: what it must equal."""
    return json.dumps(tree_to_json(sort_children(root)), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- canonical form


def test_canonical_text_of_a_small_tree_is_exact() -> None:
    root = tree(
        "root",
        tree("b", order=1, title="Zweite Stufe · ü ✓"),
        tree("a", order=1, passes=True, attempts=1, acceptance=["tests pass", 'says "hi"']),
        title="Wurzel",
        next="decompose",
    )

    assert dumps_tree(root) == (
        "{\n"
        '  "id": "root",\n'
        '  "order": 0,\n'
        '  "title": "Wurzel",\n'
        '  "goal": "goal of root",\n'
        '  "acceptance": [],\n'
        '  "next": "decompose",\n'
        '  "passes": false,\n'
        '  "attempts": 0,\n'
        '  "max_attempts": 3,\n'
        '  "children": [\n'
        "    {\n"
        '      "id": "a",\n'
        '      "order": 1,\n'
        '      "title": "title of a",\n'
        '      "goal": "goal of a",\n'
        '      "acceptance": [\n'
        '        "tests pass",\n'
        '        "says \\"hi\\""\n'
        "      ],\n"
        '      "next": "execute",\n'
        '      "passes": true,\n'
        '      "attempts": 1,\n'
        '      "max_attempts": 3,\n'
        '      "children": []\n'
        "    },\n"
        "    {\n"
        '      "id": "b",\n'
        '      "order": 1,\n'
        '      "title": "Zweite Stufe · ü ✓",\n'
        '      "goal": "goal of b",\n'
        '      "acceptance": [],\n'
        '      "next": "execute",\n'
        '      "passes": false,\n'
        '      "attempts": 0,\n'
        '      "max_attempts": 3,\n'
        '      "children": []\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )


def test_canonical_text_sorts_siblings_by_order_then_id_at_every_level() -> None:
    root = tree(
        "root",
        tree("z", tree("z.b", order=0), tree("z.a", order=0), order=0),
        tree("m", order=2),
        tree("a", tree("a.10", order=10), tree("a.9", order=9), order=1),
    )

    canonical = parse_tree(dumps_tree(root))

    assert ids(canonical) == ["root", "z", "z.a", "z.b", "a", "a.9", "a.10", "m"]


def test_canonical_text_does_not_depend_on_stored_sibling_order() -> None:
    unsorted = tree("root", tree("b", order=1), tree("a", order=1), tree("c", order=0))
    presorted = tree("root", tree("c", order=0), tree("a", order=1), tree("b", order=1))

    assert dumps_tree(unsorted) == dumps_tree(presorted)


def test_canonical_text_writes_keys_in_schema_field_order() -> None:
    root = tree("root", tree("child"))

    data = json.loads(dumps_tree(root))

    assert list(data) == SCHEMA_FIELD_ORDER
    assert list(data["children"][0]) == SCHEMA_FIELD_ORDER


def test_canonical_text_indents_by_two_spaces_and_ends_with_exactly_one_newline() -> None:
    text = dumps_tree(tree("root", tree("child")))

    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text.splitlines()[1] == '  "id": "root",'
    assert '      "id": "child",' in text.splitlines()
    assert "\t" not in text


def test_canonical_text_keeps_non_ascii_characters_as_utf8() -> None:
    text = dumps_tree(tree("wurzel-ü", title="Grüße 😀", goal="日本語"))

    assert '"title": "Grüße 😀"' in text
    assert '"goal": "日本語"' in text
    assert "\\u" not in text
    assert text.encode("utf-8").decode("utf-8") == text


@pytest.mark.parametrize(
    "root",
    [
        pytest.param(tree("leaf"), id="single leaf"),
        pytest.param(
            tree("root", tree("b", order=1), tree("a", order=1), tree("c", order=-5)),
            id="unsorted siblings",
        ),
        pytest.param(
            tree("r", tree("r.1", tree("r.1.1", acceptance=["x"]), passes=False)),
            id="nested",
        ),
        pytest.param(
            tree(
                "esc",
                title='quote " backslash \\ slash /',
                goal="tab\tnewline\ncontrol\x01 del\x7f",
                acceptance=["", "😀", "\u2028 separator"],
            ),
            id="strings that need escaping",
        ),
        pytest.param(
            tree("big", order=-(2**40), attempts=2, max_attempts=2**31, passes=True),
            id="large numbers",
        ),
    ],
)
def test_canonical_text_equals_json_dumps_of_the_sorted_tree(root: Node) -> None:
    assert dumps_tree(root) == reference_canonical_text(root)


def test_canonical_text_reads_back_as_the_sorted_tree() -> None:
    root = tree("root", tree("b", order=1, acceptance=["é"]), tree("a", order=0))

    assert parse_tree(dumps_tree(root)) == sort_children(root)


def test_sort_children_returns_the_same_object_for_an_already_sorted_tree() -> None:
    root = tree("root", tree("a", order=0), tree("b", order=1))

    assert sort_children(root) is root


# ---------------------------------------------------------------- reading keeps the given order


def test_tree_from_json_keeps_siblings_in_the_order_given() -> None:
    data = node("root", node("b", order=1), node("a", order=0))

    assert ids(tree_from_json(data)) == ["root", "b", "a"]


def test_parse_tree_reports_unsorted_children_instead_of_sorting_them() -> None:
    text = text_of(node("root", node("b", order=1), node("a", order=0)))

    with pytest.raises(TreeValidationError) as raised:
        parse_tree(text)

    assert raised.value.layer == "invariants"
    assert (
        str(raised.value) == "tree invariants failed: root: children must be sorted by (order,id)"
    )


def test_tree_to_json_keeps_stored_order_and_writes_every_field() -> None:
    root = tree("root", tree("b", order=1), tree("a", order=0), next="decompose")

    data = tree_to_json(root)

    assert [child["id"] for child in data["children"]] == ["b", "a"]
    assert data["next"] == "decompose"
    assert list(data) == SCHEMA_FIELD_ORDER


def test_parse_tree_accepts_utf8_bytes() -> None:
    data = node("root", title="Grüße")

    assert parse_tree(text_of(data).encode("utf-8")).title == "Grüße"


def test_parse_tree_builds_enums_and_tuples() -> None:
    parsed = parse_tree(text_of(node("root", acceptance=["a", "b"], next="decompose")))

    assert parsed.next is NodeNext.DECOMPOSE
    assert parsed.acceptance == ("a", "b")


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("layer", "errors", "message"),
    [
        ("json", ("the file is empty",), "tree is not valid JSON: the file is empty"),
        (
            "schema",
            ("$ must contain 'id'", "$.order must be integer"),
            "tree schema validation failed: $ must contain 'id'; $.order must be integer",
        ),
        (
            "invariants",
            ("duplicate id 'a' at root/a", "root: max_attempts must be > 0"),
            "tree invariants failed: duplicate id 'a' at root/a; root: max_attempts must be > 0",
        ),
    ],
)
def test_tree_validation_error_message_joins_errors_after_its_layer_prefix(
    layer: TreeLayer, errors: tuple[str, ...], message: str
) -> None:
    error = TreeValidationError(layer, errors)

    assert str(error) == message
    assert error.errors == errors
    assert error.layer == layer


def test_parse_tree_reports_every_schema_error_in_the_exception() -> None:
    data = node("root", node("a", order="1"), passes="no")

    with pytest.raises(TreeValidationError) as raised:
        parse_tree(text_of(data))

    assert raised.value.layer == "schema"
    assert raised.value.errors == (
        "$.children[0].order must be integer",
        "$.passes must be boolean",
    )
    assert str(raised.value) == (
        "tree schema validation failed: $.children[0].order must be integer; "
        "$.passes must be boolean"
    )


def test_parse_tree_checks_invariants_only_after_the_schema_passes() -> None:
    data = node("root", node("root", max_attempts=0), passes="no")

    with pytest.raises(TreeValidationError) as raised:
        parse_tree(text_of(data))

    assert raised.value.layer == "schema"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "tree is not valid JSON: the file is empty", id="empty"),
        pytest.param(" \n\t\n", "tree is not valid JSON: the file is empty", id="blank"),
        pytest.param(b"", "tree is not valid JSON: the file is empty", id="empty bytes"),
        pytest.param(
            "not json",
            "tree is not valid JSON: Expecting value at line 1 column 1",
            id="not json",
        ),
        pytest.param(
            '{\n  "id": "root",\n}',
            "tree is not valid JSON: Expecting property name enclosed in double quotes "
            "at line 3 column 1",
            id="trailing comma",
        ),
        pytest.param(
            "{} {}", "tree is not valid JSON: Extra data at line 1 column 4", id="extra data"
        ),
        pytest.param(
            b'{"id": "\xff"}',
            "tree is not valid JSON: not UTF-8 (byte 8: invalid start byte)",
            id="not utf-8",
        ),
    ],
)
def test_tree_text_that_is_not_json_is_reported_with_where_it_breaks(
    text: str | bytes, message: str
) -> None:
    with pytest.raises(TreeValidationError) as raised:
        decode_tree_text(text)

    assert raised.value.layer == "json"
    assert str(raised.value) == message


@pytest.mark.parametrize("document", ["[]", "null", '"tree"', "3"])
def test_json_that_is_not_an_object_fails_the_schema(document: str) -> None:
    with pytest.raises(TreeValidationError) as raised:
        parse_tree(document)

    assert str(raised.value) == "tree schema validation failed: $ must be object"


# ---------------------------------------------------------------- the JSON reader
# The reader is json.loads with two refusals of its own: duplicate keys, and nesting deeper
# than it can follow. Until the depth limit a hand-written iterative parser read any
# depth; these tests pinned it reading documents 3,000 and 20,000 levels deep. Such documents
# are now refused with one clear line instead, which is what the tests below pin.

# Deeper than CPython's default recursion limit: json.loads cannot follow it.
TOO_DEEP_FOR_THE_READER = 3_000

RFC_8259_DOCUMENTS = [
    "0",
    "-0",
    "-0.0",
    "12",
    "1.5",
    "1e5",
    "1E+2",
    "2.5e-3",
    "1E400",
    "123456789012345678901234567890",
    '""',
    '"plain"',
    r'"escapes \" \\ \/ \b \f \n \r \t"',
    r'"\u00e9\u2028"',
    r'"\ud83d\ude00"',
    '"é😀 raw"',
    "true",
    "false",
    "null",
    "[]",
    "{}",
    "[[]]",
    "[{}]",
    '{"": ""}',
    '{"a": [1, {"b": null}], "c": "d"}',
    " \t\n\r[ 1 , 2 ]\r\n ",
    "[1, [2, [3, [4]]], 5]",
    '[true, false, null, -1.25e+10, "x"]',
    '{ "k" : { "j" : [ ] } }',
]


def wrap_in_lists(document: str, depth: int) -> str:
    return "[" * depth + document + "]" * depth


def test_loads_json_on_documents_without_duplicate_keys_is_json_loads() -> None:
    for document in RFC_8259_DOCUMENTS:
        assert repr(loads_json(document)) == repr(json.loads(document)), document


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ('{"status": "retry", "status": "done"}', '"status"'),
        ('{"a": {"b": 1, "c": 2, "b": 3}}', '"b"'),
        ('[{"": 1, "": 1}]', '""'),
    ],
)
def test_loads_json_refuses_a_duplicate_key_in_one_line(document: str, key: str) -> None:
    with pytest.raises(RefusedJson) as raised:
        loads_json(document)

    assert str(raised.value) == f"duplicate key {key} in an object"


@pytest.mark.parametrize(
    "document",
    [
        wrap_in_lists("{}", TOO_DEEP_FOR_THE_READER),
        wrap_in_lists("{}", 20_000),
        '{"k": ' * TOO_DEEP_FOR_THE_READER + '"bottom"' + "}" * TOO_DEEP_FOR_THE_READER,
        "[" * 50_000,
        "[" * 20_000 + "]" * 19_999,
    ],
)
def test_loads_json_refuses_nesting_deeper_than_it_can_follow_in_one_line(document: str) -> None:
    with pytest.raises(RefusedJson) as raised:
        loads_json(document)

    assert str(raised.value) == "it nests deeper than the JSON reader can follow"


def test_a_tree_nested_deeper_than_the_reader_can_follow_is_refused_as_json() -> None:
    with pytest.raises(TreeValidationError) as raised:
        parse_tree(chain_text(10_000))

    assert raised.value.layer == "json"
    assert str(raised.value) == (
        "tree is not valid JSON: it nests deeper than the JSON reader can follow "
        "(a tree is at most 100 levels deep)"
    )


@pytest.mark.parametrize("document", [wrap_in_lists("{}", 20_000), "[" * 50_000])
def test_tree_text_nested_too_deep_is_refused_as_json_by_every_reading(document: str) -> None:
    for read in (parse_tree, decode_tree_text):
        with pytest.raises(TreeValidationError) as raised:
            read(document)
        assert raised.value.layer == "json"
        assert "nests deeper than the JSON reader can follow" in str(raised.value)


def test_a_tree_with_a_duplicate_key_is_refused_as_json() -> None:
    text = text_of(node("root")).replace('"passes": false', '"passes": false, "passes": true')

    with pytest.raises(TreeValidationError) as raised:
        parse_tree(text)

    assert str(raised.value) == 'tree is not valid JSON: duplicate key "passes" in an object'


# ---------------------------------------------------------------- the depth limit


def test_a_chain_of_100_levels_parses_validates_selects_and_updates() -> None:
    depth = 100
    started = time.monotonic()

    chain = parse_tree(chain_text(depth))
    assert depth_of(chain) == depth
    assert count_nodes(chain) == depth
    assert messages(invariant_findings(chain)) == ()

    selection = select_leaf(chain)
    assert selection.status is SelectionStatus.OPEN
    assert selection.node is not None
    assert selection.node.id == "n99"
    assert selection.path == "/".join(f"n{index}" for index in range(depth))

    updated, summary = apply_state_updates(chain, chain, "n99", AgentStatus.DONE, GuardOutcome.PASS)
    assert summary.passes_set == ("n99",)
    assert len(summary.derived_passes_set) == depth - 1
    assert updated.passes
    assert select_leaf(updated).status is SelectionStatus.COMPLETE
    assert updated != chain
    assert sort_children(chain) == chain

    assert time.monotonic() - started < 5


def test_a_chain_of_101_levels_is_refused_at_its_deepest_node() -> None:
    with pytest.raises(TreeValidationError) as raised:
        parse_tree(chain_text(101))

    path = "/".join(f"n{index}" for index in range(101))
    assert str(raised.value) == (
        f"tree invariants failed: {path}: depth 101 exceeds the limit of 100"
    )


def test_a_tree_too_deep_is_refused_once_at_the_first_node_too_deep() -> None:
    root = node("root", node("a", chain_json(150)))
    path = "/".join(["root", "a", *(f"n{index}" for index in range(99))])

    errors = messages(invariant_findings(tree_from_json(root)))

    assert errors == (f"{path}: depth 101 exceeds the limit of 100",)


def test_a_100_deep_chain_dumps_canonically_and_reads_back() -> None:
    chain = parse_tree(chain_text(100, bottom_passes=True))

    text = dumps_tree(chain)

    assert text.endswith("}\n")
    assert text.count('"id": ') == 100
    assert "\n" + "  " * 198 + '  "id": "n99",\n' in text
    assert parse_tree(text) == chain


# ---------------------------------------------------------------- one description of a node


def test_the_node_class_has_the_schemas_fields_in_the_schemas_order() -> None:
    node_definition = load_schema(TREE_SCHEMA_FILE)["$defs"]["node"]

    assert list(NODE_FIELDS) == node_definition["required"] == list(node_definition["properties"])
    assert list(NODE_FIELDS) == SCHEMA_FIELD_ORDER
