"""The wire (runner_shell/remote/wire.py): core values to canonical JSON and back, and nothing
but runner_core's own classes built from a document."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap, pset, pvector

from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.tree.model import GuardOutcome
from runner_shell.remote import wire
from runner_shell.remote.job_files import JobRequest
from runner_shell.remote.wire import WireError

LEAVES: st.SearchStrategy[object] = st.none() | st.booleans() | st.integers() | st.text()
LEAVES = LEAVES | st.binary() | st.floats(allow_nan=False) | st.sampled_from(list(GuardOutcome))
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.tuples(inner, inner)
        | st.lists(inner, max_size=3).map(pvector)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(pmap)
        | st.frozensets(st.integers(), max_size=3)
        | st.frozensets(st.text(max_size=3), max_size=3).map(pset)
    ),
    max_leaves=12,
)


@given(VALUES)
def test_every_value_comes_back_equal_and_of_its_kind(value: object) -> None:
    back = wire.loads(wire.dumps(value), object)

    assert back == value
    assert type(back) is type(value)
    assert wire.dumps(back) == wire.dumps(value)


def test_attrs_values_come_back_through_their_constructors() -> None:
    decision = ImportDecision((Change("a.txt", "100644", "0" * 40),), ("x",), None)

    assert wire.loads(wire.dumps(decision), ImportDecision) == decision
    with pytest.raises(WireError, match="not an encoded Change"):
        wire.loads(wire.dumps(decision), Change)


@pytest.mark.parametrize(
    "name",
    [
        "os:system",
        "subprocess:Popen",
        "runner_core.iteration.machine:attrs.Factory",
        "runner_core.changes.import_rules:enum.Enum",
        "runner_coreX.a:B",
        "runner_core.nonexistent:X",  # no such module: refused, not an ImportError
        "runner_core.:X",
        "runner_core.testing:Edit",  # the test helpers hold no value of an iteration
        "runner_core.validation._validators:X",
        "runner_core.changes.import_rules:",
        ["runner_core.changes.import_rules:Change"],
    ],
)
def test_a_document_naming_other_code_is_refused(name: object) -> None:
    document = json.dumps({"$attrs": name, "f": {}})

    with pytest.raises(WireError):
        wire.loads(document, object)


@pytest.mark.parametrize(
    "document",
    [
        "[" * 100_000 + "]" * 100_000,  # deeper than json.loads goes
        '{"$tuple":' * 5_000 + "[]" + "}" * 5_000,  # deeper than decoding goes
        '{"$attrs": "runner_core.changes.import_rules:Change", "f": {}}',  # no path
        '{"$attrs": "runner_core.changes.import_rules:Change", "f": {"path": 1, "x": 2}}',
        '{"$enum": "runner_core.tree.model:GuardOutcome", "v": "maybe"}',
        '{"$float": []}',
        '{"$bytes": "not base64!"}',
        '{"$pmap": [[[], 1]]}',  # an unhashable key
        '{"$pmap": [1]}',
        '{"$dict": {}}',
        '{"$tuple": [], "$pvector": []}',
        '{"$attrs": "runner_core.changes.import_rules:Change"}',
        "[1, 2",
    ],
)
def test_whatever_a_document_holds_it_fails_as_a_wire_error(document: str) -> None:
    # What a worker or the shared server sends is decoded: nothing in it ends otherwise.
    with pytest.raises(WireError):
        wire.loads(document, object)
    try:
        parsed = json.loads(document)
    except (ValueError, RecursionError):
        return
    with pytest.raises(WireError):
        wire.decode(parsed)


TAGS = ["$attrs", "$enum", "$float", "$bytes", "$tuple", "$pvector", "$pmap", "$dict", "$pset"]
CLASS_NAMES = [
    "runner_core.changes.import_rules:Change",
    "runner_core.changes.import_rules:ImportDecision",
    "runner_core.tree.model:GuardOutcome",
    "runner_core.tree.model:Node",
    "runner_core.iteration.machine:IterationMachine",
    "runner_core.run.sandbox_config:LimitHit",
]
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
DOCUMENTS = st.recursive(
    SCALARS | st.sampled_from(CLASS_NAMES),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from([*TAGS, "f", "v", "path", "x"]), inner, max_size=3)
    ),
    max_leaves=16,
)


@given(DOCUMENTS)
def test_any_json_document_decodes_or_is_a_wire_error(document: object) -> None:
    # Whatever a worker sends, it is a value or a WireError: never another exception.
    with contextlib.suppress(WireError):
        wire.decode(document)


def test_a_kind_the_wire_does_not_carry_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="does not carry a set"):
        wire.dumps({1, 2})
    with pytest.raises(TypeError, match="runner_core's classes only"):
        wire.dumps(JobRequest("run-1", 1, "0" * 40, "{}", 1.0))
