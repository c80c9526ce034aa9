"""Specifications of the audit's pure pieces: trailers, chain, tree_diff, operator commits and
the report's lines and document."""

from __future__ import annotations

import json
from importlib import resources
from random import Random
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import Phase, find, settings

from runner_core import dumps_tree
from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import TREE_PATH, CommitFacts, start_run_id
from runner_core.audit.findings import AuditReport, Finding, OperatorEntry, audit_to_json
from runner_core.history.records import ErrorKind, TokenUsage
from runner_core.json_form import json_form
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.trailers import (
    DamagedTrailer,
    parse_trailers,
    record_from_trailers,
    record_trailers,
    render_trailers,
)
from runner_core.testing import runs
from runner_core.testing.commits import run_commits
from runner_core.testing.runs import Run
from runner_core.tree.diff import TreeDiff, change_lines, tree_diff
from runner_core.tree.model import Node, NodeNext
from runner_core.views.diff import DiffDocument
from tests.helpers.records import record
from tests.helpers.trees import tree

# A run of at least one step, drawn without shrinking from a fixed seed: shrinking a run to the
# smallest one took 10-19 s, and these tests need any run with a step, not the smallest.
A_DRAWN_RUN = settings(database=None, phases=[Phase.generate], max_examples=50)


def schema(name: str) -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath(f"views/{name}.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def message_of(trailers: str) -> str:
    return f"chore(loop): run run-1 iter 1 node a status=done guard=pass\n\n{trailers}"


FULL = record(
    1,
    "a",
    tokens=TokenUsage(10, 5, 2),
    cost_usd=0.125,
    error_kind=ErrorKind.AGENT,
    error="tree.json after the agent:\nline two",
)


def test_a_record_renders_as_trailers_in_their_fixed_order() -> None:
    assert render_trailers(record_trailers(FULL)) == (
        "Runner-Run: run-1\nRunner-Iter: 1\nRunner-Node: a\nRunner-Status: done\n"
        "Runner-Guard: pass\nRunner-Role: executor\nRunner-Exec: 1\n"
        "Runner-Started-At: 2026-01-01T00:00:00Z\nRunner-Ended-At: 2026-01-01T00:00:01Z\n"
        "Runner-Duration-Ms: 1000\nRunner-Attempts: 0/0\nRunner-Tokens: 10/5/2\n"
        "Runner-Cost-Usd: 0.125\nRunner-Error: agent\n"
        'Runner-Error-Message: "tree.json after the agent:\\nline two"\n'
        "Runner-Backend: command\n"
    )


def test_trailers_alone_rebuild_the_record() -> None:
    message = message_of(render_trailers(record_trailers(FULL)) + "Signed-off-by: x <x@y>\n")
    assert record_from_trailers(parse_trailers(message)) == FULL


DAMAGES = [
    ("Runner-Iter: 1", "Runner-Iter: one", "damaged trailer Runner-Iter: must be a non-negative"),
    (
        "Runner-Tokens: 10/5/2",
        "Runner-Tokens: 10/5",
        "damaged trailer Runner-Tokens: must be N/N/N",
    ),
    ("Runner-Cost-Usd: 0.125", "Runner-Cost-Usd: -1", "damaged trailer Runner-Cost-Usd"),
    (
        "Runner-Status: done",
        "Runner-Status: finished",
        "damaged trailer Runner-Status: must be one",
    ),
    (
        "Runner-Started-At: 2026",
        "Runner-Started-At: yesterday",
        "damaged trailer Runner-Started-At",
    ),
    ("Runner-Attempts: 0/0", "Runner-Attempts: 0/2", "damaged trailer Runner-Attempts: must be"),
    ("Runner-Role: executor\n", "", "damaged trailer Runner-Role: missing"),
    ("Runner-Error: agent\n", "", "damaged trailer Runner-Error: missing"),
    ("Runner-Error-Message: ", "Runner-Error-Message: not json ", "Runner-Error-Message: must be"),
    ("Runner-Guard: pass", "Runner-Guard: pass\nRunner-Guard: fail", "Runner-Guard: appears twice"),
    ("Runner-Exec: 1", "Runner-Exec: 1\nRunner-Mood: calm", "damaged trailer Runner-Mood: unknown"),
]


@pytest.mark.parametrize(("good", "bad", "error"), DAMAGES)
def test_a_damaged_trailer_is_named(good: str, bad: str, error: str) -> None:
    text = render_trailers(record_trailers(FULL))
    assert good in text
    with pytest.raises(DamagedTrailer, match=error.replace("(", r"\(")):
        record_from_trailers(parse_trailers(message_of(text.replace(good, bad, 1))))


def test_the_chain_seed_is_pinned() -> None:
    assert chain_seed("run-1") == chain_seed("run-1") != chain_seed("run-2")
    assert len(chain_seed("run-1")) == 64


def test_a_chain_link_of_a_text_tree_is_the_link_of_its_utf8_bytes() -> None:
    # Over a megabyte of text, multi-byte characters across the slices it is hashed in.
    text = "é€😀\n" * 400_000
    seed = chain_seed("run-1")

    assert chain_link(seed, FULL, text) == chain_link(seed, FULL, text.encode("utf-8"))


def test_start_run_id_reads_the_start_subject_only() -> None:
    assert start_run_id("chore(loop): start run run-7") == "run-7"
    assert start_run_id("chore(loop): run run-7 iter 1") is None


# ---------------------------------------------------------------- tree_diff


def diff_command_document(diff: TreeDiff) -> dict[str, Any]:
    """The `runner diff --json` document of `diff`."""
    result: dict[str, Any] = json_form(DiffDocument("run-1", 1, "iterations/1", diff))
    return result


def test_tree_diff_shows_a_decomposition_node_by_node() -> None:
    before = tree("root", tree("a", next="decompose"), tree("b"))
    after = tree("root", tree("a", tree("a.1"), tree("a.2", order=1), next="decompose"), tree("b"))
    diff = tree_diff(before, after)
    assert change_lines(diff) == ("added a.1 under a", "added a.2 under a")
    jsonschema.validate(diff_command_document(diff), schema("diff"))


def test_tree_diff_shows_moves_and_each_changed_field() -> None:
    before = tree("root", tree("a", tree("x")), tree("b"))
    after = tree("root", tree("a"), tree("b", tree("x", title="new", attempts=1)))
    assert change_lines(tree_diff(before, after)) == (
        "x moved a -> b",
        "x title: 'title of x' -> 'new'",
        "x attempts: 0 -> 1",
    )
    document = diff_command_document(tree_diff(before, after))
    jsonschema.validate(document, schema("diff"))
    assert document["changes"][0]["moved"] is True


def test_tree_diff_of_equal_trees_is_empty() -> None:
    assert tree_diff(tree("root", tree("a")), tree("root", tree("a"))).changes == ()


# ---------------------------------------------------------------- operator commits


def facts(
    sha: str, message: str, state: Node, touched: tuple[str, ...] = (TREE_PATH,)
) -> CommitFacts:
    return CommitFacts(sha, message, dumps_tree(state).encode(), b"{}", touched)


def operator_message(op: str, node_id: str) -> str:
    return (
        f"chore(runner): node {op} {node_id} run run-1\n\nRunner-Run: run-1\nRunner-Op: {op}\n"
        f"Runner-Node: {node_id}\nRunner-Actor: ann <ann@x>\nRunner-Next-Iter: 1\n"
    )


START = tree("root", tree("a", attempts=2, max_attempts=2), tree("b"), tree("c", passes=True))


def audit_op(op: str, node_id: str, after: Node) -> AuditReport:
    start = facts("s" * 40, "chore(loop): start run run-1\n", START)
    return audit_run("run-1", start, (facts("o" * 40, operator_message(op, node_id), after),))


def with_a(**fields: Any) -> Node:
    a = attrs.evolve(START.children[0], **fields)
    return attrs.evolve(START, children=(a, *START.children[1:]))


ALLOWED = [
    ("retry", "a", with_a(max_attempts=4)),
    ("decompose", "a", with_a(next=NodeNext.DECOMPOSE, max_attempts=3)),
    ("decompose", "a", with_a(children=(tree("a.1"), tree("a.2", order=1)))),
    ("replace", "a", with_a(title="plan B", attempts=0, children=(tree("a.1"),))),
    ("skip", "b", attrs.evolve(START, children=(START.children[0], START.children[2]))),
]


@pytest.mark.parametrize(("op", "node_id", "after"), ALLOWED)
def test_an_operator_commit_within_its_op_is_listed_not_found(
    op: str, node_id: str, after: Node
) -> None:
    report = audit_op(op, node_id, after)
    assert report.findings == ()
    assert report.operator_actions == (OperatorEntry("o" * 40, op, node_id, "ann <ann@x>"),)


REFUSED = [
    ("retry", "a", with_a(max_attempts=1, attempts=1), "a", "attempts 2 -> 1"),
    ("retry", "a", with_a(max_attempts=4, title="sneaky"), "a", "title"),
    ("decompose", "a", with_a(attempts=0, next=NodeNext.DECOMPOSE), "a", "attempts 2 -> 0"),
    ("replace", "a", with_a(title="x", attempts=1), "a", "attempts 2 -> 1"),
    ("skip", "b", with_a(max_attempts=9), "a", "max_attempts 2 -> 9"),
]


@pytest.mark.parametrize(("op", "node_id", "after", "node", "text"), REFUSED)
def test_an_operator_commit_beyond_its_op_is_a_finding(
    op: str, node_id: str, after: Node, node: str, text: str
) -> None:
    report = audit_op(op, node_id, after)
    assert any(f.node == node and text in f.what for f in report.findings), report.lines()


def test_an_operator_commit_on_a_passed_node_is_a_finding() -> None:
    report = audit_op("retry", "c", START)
    assert [f.what for f in report.findings] == ["operator retry on a passed node"]


def test_a_tell_commit_is_an_operator_action() -> None:
    start = facts("s" * 40, "chore(loop): start run run-1\n", START)
    tell = facts(
        "t" * 40,
        "chore(runner): tell run run-1\n\nRunner-Run: run-1\nRunner-Actor: ann\n",
        START,
        (".runner/state/guidance.md",),
    )
    report = audit_run("run-1", start, (tell,))
    assert report.findings == ()
    assert [entry.op for entry in report.operator_actions] == ["tell"]


def test_a_commit_touching_other_state_files_is_a_hand_edit_naming_the_file() -> None:
    start = facts("s" * 40, "chore(loop): start run run-1\n", START)
    edit = facts("e" * 40, "tweak config\n", START, (".runner/state/config.toml",))
    report = audit_run("run-1", start, (edit,))
    assert report.lines() == (
        "audit: run=run-1 iterations=0 operator_ops=0 findings=1",
        "audit: finding commit=eeeeeeee iter=- node=- hand edit .runner/state/config.toml",
    )


def test_the_audit_document_matches_its_schema() -> None:
    report = AuditReport(
        "run-1",
        2,
        (OperatorEntry("o" * 40, "skip", "b", "ann"),),
        (Finding(1, "a", "hand edit passes false -> true", "e" * 40, None),),
        ("c",),
    )
    document = audit_to_json(report)
    jsonschema.validate(document, schema("audit"))
    assert document["clean"] is False
    assert document["findings"] == [
        {"commit": "e" * 40, "iter": None, "node": "a", "what": "hand edit passes false -> true"}
    ]


def test_a_run_state_with_a_foreign_chain_is_still_checked_against_its_iteration() -> None:
    run = _a_run_with_a_step()
    start, commits = run_commits(run)
    state = json.loads(commits[0].run_state_json or b"")
    state["chain"] = chain_seed("another-run")
    state["next_iter"] = 7
    forged = attrs.evolve(commits[0], run_state_json=json.dumps(state).encode())

    report = audit_run(run.run_id, start, (forged, *commits[1:]))

    assert [finding.what for finding in report.findings] == [
        "run_state.json chain is not the commit's Runner-Chain",
        f"run_state.json run_id={run.run_id} next_iter=7 does not follow iteration 1 "
        f"(run_id={run.run_id} next_iter=2, last status and guard as recorded)",
    ]


def test_a_run_state_chain_other_than_the_commits_is_a_finding() -> None:
    run = _a_run_with_a_step()
    start, commits = run_commits(run)
    state = json.loads(commits[0].run_state_json or b"")
    state["chain"] = chain_seed("another-run")
    forged = attrs.evolve(commits[0], run_state_json=json.dumps(state).encode())

    report = audit_run(run.run_id, start, (forged, *commits[1:]))

    assert [finding.what for finding in report.findings] == [
        "run_state.json chain is not the commit's Runner-Chain"
    ]


def _a_run_with_a_step() -> Run:
    return find(
        runs(max_iterations=3),
        lambda run: len(run.steps) > 0,
        settings=A_DRAWN_RUN,
        random=Random(0),
    )
