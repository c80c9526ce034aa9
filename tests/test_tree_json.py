"""Specification of the task tree as JSON text (SPEC §3): reading, the canonical form, depth."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from core_trees import chain_text, depth_of, ids, node, text_of, tree

from runner_core import (
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    SelectionStatus,
    TreeValidationError,
    apply_state_updates,
    count_nodes,
    decode_tree_text,
    dumps_tree,
    loads_json,
    parse_tree,
    select_leaf,
    sort_children,
    tree_from_json,
    tree_to_json,
    validate_invariants,
)

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
    """SPEC §3 in one line: what the canonical form must equal."""
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
    layer: str, errors: tuple[str, ...], message: str
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


# ---------------------------------------------------------------- loads_json beyond recursion

# Deeper than CPython's default recursion limit, so json.loads gives up and the fallback parses.
FALLBACK_DEPTH = 3_000

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
    '{"a": 1, "a": 2}',
    "[1, [2, [3, [4]]], 5]",
    '[true, false, null, -1.25e+10, "x"]',
    '{ "k" : { "j" : [ ] } }',
]


def wrap_in_lists(document: str, depth: int) -> str:
    return "[" * depth + document + "]" * depth


def unwrap_lists(value: Any, depth: int) -> Any:
    for _ in range(depth):
        assert isinstance(value, list)
        assert len(value) == 1
        value = value[0]
    return value


def test_loads_json_on_shallow_documents_is_json_loads() -> None:
    for document in RFC_8259_DOCUMENTS:
        assert repr(loads_json(document)) == repr(json.loads(document)), document


@pytest.mark.parametrize("document", RFC_8259_DOCUMENTS)
def test_loads_json_fallback_reads_every_document_as_json_loads_does(document: str) -> None:
    wrapped = wrap_in_lists(document, FALLBACK_DEPTH)
    with pytest.raises(RecursionError):
        json.loads(wrapped)

    parsed = unwrap_lists(loads_json(wrapped), FALLBACK_DEPTH)

    assert repr(parsed) == repr(json.loads(document))


def test_loads_json_fallback_reads_objects_nested_in_objects() -> None:
    document = '{"k": ' * FALLBACK_DEPTH + '"bottom"' + "}" * FALLBACK_DEPTH

    value = loads_json(document)

    for _ in range(FALLBACK_DEPTH):
        assert list(value) == ["k"]
        value = value["k"]
    assert value == "bottom"


@pytest.mark.parametrize(
    "document",
    [
        "[1,]",
        '{"a" 1}',
        '{"a": 1,}',
        "{1: 2}",
        "[1 2]",
        '{"a": 1 "b": 2}',
        "tru",
        "nul",
        "[-]",
        '"unterminated',
        '"bad \\x escape"',
        '"control \x01 char"',
    ],
)
def test_loads_json_fallback_rejects_invalid_json_where_json_loads_does(document: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(document)

    with pytest.raises(json.JSONDecodeError) as raised:
        loads_json(wrap_in_lists(document, FALLBACK_DEPTH))

    assert raised.value.pos == FALLBACK_DEPTH + expected.value.pos


def test_loads_json_fallback_rejects_data_after_the_document() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        loads_json(wrap_in_lists("", FALLBACK_DEPTH) + " x")

    assert raised.value.msg == "Extra data"
    assert raised.value.pos == 2 * FALLBACK_DEPTH + 1


@pytest.mark.parametrize("document", ["[" * 50_000, "[" * 20_000 + "]" * 19_999])
def test_loads_json_fallback_rejects_unclosed_deep_documents(document: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_json(document)


def test_loads_json_reads_a_20000_level_nested_document() -> None:
    depth = 20_000

    value = loads_json(wrap_in_lists("{}", depth))

    assert unwrap_lists(value, depth) == {}


# ---------------------------------------------------------------- deep trees


def test_a_10000_deep_chain_parses_validates_selects_and_updates_without_recursion() -> None:
    depth = 10_000
    started = time.monotonic()

    chain = parse_tree(chain_text(depth))
    assert depth_of(chain) == depth
    assert count_nodes(chain) == depth
    assert validate_invariants(chain) == ()

    selection = select_leaf(chain)
    assert selection.status is SelectionStatus.OPEN
    assert selection.node is not None
    assert selection.node.id == "n9999"
    assert selection.path == "/".join(f"n{index}" for index in range(depth))

    updated, summary = apply_state_updates(
        chain, chain, "n9999", AgentStatus.DONE, GuardOutcome.PASS
    )
    assert summary.passes_set == ("n9999",)
    assert len(summary.derived_passes_set) == depth - 1
    assert updated.passes
    assert select_leaf(updated).status is SelectionStatus.COMPLETE
    assert updated != chain
    assert sort_children(chain) == chain

    assert time.monotonic() - started < 5


def test_a_1000_deep_chain_dumps_canonically_and_reads_back() -> None:
    chain = parse_tree(chain_text(1_000, bottom_passes=True))

    text = dumps_tree(chain)

    assert text.endswith("}\n")
    assert text.count('"id": ') == 1_000
    assert "\n" + "  " * 1_998 + '  "id": "n999",\n' in text
    assert parse_tree(text) == chain
