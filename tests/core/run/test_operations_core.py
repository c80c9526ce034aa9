"""runner_core.run.operations: what each operator command does to a tree, and its commit message."""

from __future__ import annotations

import pytest

from runner_core import Node, NodeNext
from runner_core.run.operations import (
    NodeOperation,
    OperationError,
    OperatorAction,
    action_from_message,
    decompose_later,
    operation_message,
    plan_from_json,
    replace_node,
    retry_node,
    run_actions,
    skip_node,
)
from runner_core.tree.model import nodes_by_id


def leaf(node_id: str, order: int = 0, *, passes: bool = False, attempts: int = 0) -> Node:
    return Node(
        node_id, order, node_id, f"Do {node_id}.", (), NodeNext.EXECUTE, passes, attempts, 2
    )


def parent(node_id: str, *children: Node) -> Node:
    passes = all(child.passes for child in children)
    return Node(node_id, 0, node_id, "g", (), NodeNext.DECOMPOSE, passes, 0, 2, children)


TREE = parent("root", leaf("a", 0, passes=True), leaf("b", 1, attempts=2), leaf("c", 2))
ACTION = OperatorAction("run-1", NodeOperation.SKIP, "b", "Ada <ada@x>", 7)


def test_retry_sets_max_attempts_to_attempts_used_plus_n() -> None:
    node = nodes_by_id(retry_node(TREE, "b", 3))["b"]
    assert (node.attempts, node.max_attempts) == (2, 5)


def test_decompose_later_marks_the_leaf_and_gives_one_attempt() -> None:
    node = nodes_by_id(decompose_later(TREE, "b"))["b"]
    assert (node.next, node.attempts, node.max_attempts) == (NodeNext.DECOMPOSE, 2, 3)


def test_replace_resets_attempts_and_keeps_id_order_and_max_attempts() -> None:
    plan = plan_from_json({"title": "T", "goal": "G", "acceptance": ["x"], "next": "decompose"})
    node = nodes_by_id(replace_node(TREE, "b", plan, 3))["b"]
    assert (node.id, node.order, node.title, node.goal, node.acceptance) == (
        "b",
        1,
        "T",
        "G",
        ("x",),
    )
    assert (node.next, node.attempts, node.max_attempts, node.children) == (
        NodeNext.DECOMPOSE,
        0,
        2,
        (),
    )


def test_skipping_the_last_open_child_completes_the_parent() -> None:
    after = skip_node(skip_node(TREE, "b"), "c")
    assert [child.id for child in after.children] == ["a"]
    assert after.passes is True


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "node replace: --from must hold a JSON object"),
        (
            {"title": "T", "goal": " ", "acceptance": [], "next": "execute"},
            "node replace: --from: decomposer child 0 has an empty goal",
        ),
    ],
)
def test_a_bad_plan_is_refused(document: object, message: str) -> None:
    with pytest.raises(OperationError) as raised:
        plan_from_json(document)
    assert str(raised.value) == message


def test_the_commit_message_round_trips_through_its_trailers() -> None:
    message = operation_message(ACTION)
    assert message.splitlines()[0] == "chore(runner): node skip b run run-1"
    assert action_from_message(message) == ACTION


def test_run_actions_keeps_only_the_runs_own_operator_commits() -> None:
    other = OperatorAction("run-2", NodeOperation.RETRY, "x", "me", 1)
    messages = [operation_message(ACTION), "chore(loop): step\n", operation_message(other)]
    assert run_actions(messages, "run-1") == (ACTION,)
