"""Specification of one step's pure decisions.

plan (may the step run, in which role) → context files → review of what the agent did →
conclude (the next tree, status and guard) → run_state and the commit message.
"""

from __future__ import annotations

from typing import Any

import pytest

from runner_core import AgentRole, AgentStatus, GuardOutcome, Node
from runner_core.iteration.plan import (
    AgentOutputError,
    IterationOutcome,
    PlanKind,
    Review,
    advance_run_state,
    commit_subject,
    conclude,
    conclude_runner_error,
    context_files,
    needs_failure_log,
    plan_step,
    review_decomposition,
    review_execution,
)
from runner_core.run.state import RunState, RunStateError, run_state_from_json, run_state_to_json
from runner_core.run.trailers import iteration_commit_message
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from tests.helpers.records import record as shared_record
from tests.helpers.trees import find, node, text_of, tree

DONE, RETRY, DECOMPOSED = AgentStatus.DONE, AgentStatus.RETRY, AgentStatus.DECOMPOSED
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED


def prev_tree() -> Node:
    """A passed leaf, the selected open leaf and another open leaf."""
    return tree(
        "root",
        tree("done", passes=True, attempts=1, order=0),
        tree("leaf", attempts=1, order=1),
        tree("other", order=2),
    )


def prev_json(**leaf_fields: Any) -> dict[str, Any]:
    """`prev_tree()` as the agent would find it in tree.json, with `leaf_fields` edited."""
    return node(
        "root",
        node("done", passes=True, attempts=1, order=0),
        node("leaf", **{"attempts": 1, "order": 1, **leaf_fields}),
        node("other", order=2),
    )


def executor_says(status: str, summary: str = "did the work") -> dict[str, str]:
    return {"status": status, "summary": summary}


def decomposer_says(*titles: str) -> dict[str, Any]:
    return {
        "summary": "split in two",
        "children": [
            {"title": title, "goal": f"goal: {title}", "acceptance": ["ok"], "next": "execute"}
            for title in titles
        ],
    }


# ---------------------------------------------------------------- plan_step


def test_a_complete_tree_plans_no_run() -> None:
    plan = plan_step(tree("root", passes=True), RunState(next_iter=4), 100)

    assert (plan.kind, plan.role, plan.iteration) == (PlanKind.COMPLETE, None, 4)


def test_a_stuck_selected_leaf_plans_a_hard_stop() -> None:
    root = tree("root", tree("leaf", attempts=3, max_attempts=3))

    plan = plan_step(root, RunState(), 100)

    assert (plan.kind, plan.role, plan.node.id) == (PlanKind.STUCK, None, "leaf")


@pytest.mark.parametrize(
    ("next_iter", "max_iterations", "kind"),
    [
        (1, 1, PlanKind.RUN),
        (100, 100, PlanKind.RUN),
        (101, 100, PlanKind.LIMIT),
        (2, 1, PlanKind.LIMIT),
    ],
)
def test_the_iteration_limit_stops_only_once_next_iter_exceeds_max_iterations(
    next_iter: int, max_iterations: int, kind: PlanKind
) -> None:
    plan = plan_step(prev_tree(), RunState(next_iter=next_iter), max_iterations)

    assert plan.kind is kind


@pytest.mark.parametrize(
    ("root", "kind"),
    [
        (tree("root", passes=True), PlanKind.COMPLETE),
        (tree("root", tree("leaf", attempts=3, max_attempts=3)), PlanKind.STUCK),
    ],
)
def test_complete_and_stuck_are_reported_before_the_iteration_limit(
    root: Node, kind: PlanKind
) -> None:
    assert plan_step(root, RunState(next_iter=101), 100).kind is kind


@pytest.mark.parametrize(
    ("next_", "role"),
    [("execute", AgentRole.EXECUTOR), ("decompose", AgentRole.DECOMPOSER)],
)
def test_the_selected_nodes_next_field_chooses_the_agent_role(next_: str, role: AgentRole) -> None:
    root = tree("root", tree("leaf", next=next_))

    plan = plan_step(root, RunState(next_iter=7), 100)

    assert (plan.kind, plan.role, plan.node.id, plan.iteration) == (PlanKind.RUN, role, "leaf", 7)
    assert plan.selection.path == "root/leaf"


# ---------------------------------------------------------------- context files

GOAL = "# Goal\n\nShip it.\n"
SELECTED = tree("leaf", order=1, acceptance=["it ships"])
# goal.md is the selected node's goal and acceptance, then the project goal.
GOAL_MD = (
    f"# Selected node leaf: {SELECTED.title}\n\n{SELECTED.goal}\n\nAcceptance:\n"
    + "".join(f"- {item}\n" for item in SELECTED.acceptance)
    + "\n# Project goal\n\n"
    + GOAL
)
GUARD_LOG = "=== stdout ===\n1 failed\n"


@pytest.mark.parametrize(
    ("state", "failure_log", "files"),
    [
        pytest.param(RunState(), None, {"goal.md"}, id="first iteration"),
        pytest.param(
            RunState(last_status=RETRY, last_summary="try B", last_guard=SKIPPED),
            GUARD_LOG,
            {"goal.md", "history.md"},
            id="after retry",
        ),
        pytest.param(
            RunState(last_status=RETRY, last_summary="", last_guard=SKIPPED),
            None,
            {"goal.md"},
            id="after runner error",
        ),
        pytest.param(
            RunState(last_status=DONE, last_summary="done", last_guard=FAIL),
            GUARD_LOG,
            {"goal.md", "failure.md"},
            id="after done with failed guard",
        ),
        pytest.param(
            RunState(last_status=DONE, last_summary="done", last_guard=FAIL),
            None,
            {"goal.md"},
            id="after done with failed guard but no guard log",
        ),
        pytest.param(
            RunState(last_status=DONE, last_summary="done", last_guard=PASS),
            GUARD_LOG,
            {"goal.md"},
            id="after done with passed guard",
        ),
        pytest.param(
            RunState(last_status=DECOMPOSED, last_summary="split", last_guard=SKIPPED),
            None,
            {"goal.md"},
            id="after decomposed",
        ),
    ],
)
def test_goal_is_always_written_history_only_after_retry_failure_only_after_failed_guard(
    state: RunState, failure_log: str | None, files: set[str]
) -> None:
    written = context_files(SELECTED, GOAL, state, failure_log)

    assert set(written) == files
    assert written["goal.md"] == GOAL_MD


def test_history_holds_the_summary_of_the_retry() -> None:
    state = RunState(last_status=RETRY, last_summary="the tests need a fixture", last_guard=SKIPPED)

    assert context_files(SELECTED, GOAL, state, None)["history.md"] == "the tests need a fixture\n"


def test_failure_holds_the_guard_log_of_the_previous_iteration() -> None:
    state = RunState(last_status=DONE, last_summary="done", last_guard=FAIL)

    assert context_files(SELECTED, GOAL, state, GUARD_LOG)["failure.md"] == GUARD_LOG


def test_goal_is_goal_md_without_its_frontmatter() -> None:
    goal_md = "---\nid: run-1\nowner: me\n---\n\n" + GOAL

    assert context_files(SELECTED, goal_md, RunState(), None)["goal.md"] == GOAL_MD


@pytest.mark.parametrize(
    ("status", "guard", "needed"),
    [
        (None, None, False),
        (DONE, FAIL, True),
        (DONE, PASS, False),
        (DONE, SKIPPED, False),
        (RETRY, SKIPPED, False),
        (DECOMPOSED, SKIPPED, False),
    ],
)
def test_the_guard_log_is_needed_only_after_done_with_a_failed_guard(
    status: AgentStatus | None, guard: GuardOutcome | None, needed: bool
) -> None:
    assert needs_failure_log(RunState(last_status=status, last_guard=guard)) is needed


# ---------------------------------------------------------------- review_execution


def test_an_executor_may_edit_open_nodes_and_its_tree_is_accepted() -> None:
    edited = text_of(prev_json(title="a clearer title", acceptance=["a new check"]))

    review = review_execution(prev_tree(), "leaf", executor_says("done"), edited)

    assert review.agent_error is None
    assert (review.status, review.summary) == (DONE, "did the work")
    assert review.tree is not None
    assert find(review.tree, "leaf").title == "a clearer title"
    assert review.needs_guard


def test_an_executor_retry_with_a_valid_tree_needs_no_guard() -> None:
    review = review_execution(prev_tree(), "leaf", executor_says("retry"), text_of(prev_json()))

    assert (review.status, review.agent_error, review.needs_guard) == (RETRY, None, False)
    assert review.tree == prev_tree()


@pytest.mark.parametrize(
    ("tree_text", "error"),
    [
        pytest.param(
            "{",
            "tree.json after the agent: tree is not valid JSON: "
            "Expecting property name enclosed in double quotes at line 1 column 2",
            id="not json",
        ),
        pytest.param(
            b"\xff",
            "tree.json after the agent: tree is not valid JSON: "
            "not UTF-8 (byte 0: invalid start byte)",
            id="not utf-8",
        ),
        pytest.param(
            text_of(prev_json(passes="yes")),
            "tree.json after the agent: tree schema validation failed: "
            "$.children[1].passes must be boolean",
            id="schema",
        ),
        pytest.param(
            text_of(prev_json(order=5, max_attempts=0)),
            "tree.json after the agent: tree invariants failed: "
            "root/leaf: attempts 1 exceeds max_attempts 0; "
            "root/leaf: max_attempts must be > 0; "
            "root: children must be sorted by (order,id)",
            id="invariants",
        ),
    ],
)
def test_a_corrupt_tree_after_the_executor_is_an_agent_error(
    tree_text: str | bytes, error: str
) -> None:
    review = review_execution(prev_tree(), "leaf", executor_says("done"), tree_text)

    assert review == Review(RETRY, "did the work", None, error)
    assert not review.needs_guard


def test_an_executor_that_changes_a_passed_node_makes_an_agent_error() -> None:
    data = prev_json()
    data["children"][0]["title"] = "rewritten"

    review = review_execution(prev_tree(), "leaf", executor_says("done"), text_of(data))

    assert (review.status, review.tree) == (RETRY, None)
    assert review.agent_error == "immutability failed: passed node 'done' changed in next tree"


def test_an_executor_that_adds_a_child_anywhere_makes_an_agent_error() -> None:
    data = prev_json()
    data["children"][2]["children"] = [node("other.1")]

    review = review_execution(prev_tree(), "leaf", executor_says("retry"), text_of(data))

    assert review.agent_error == (
        "child additions failed: "
        "node 'other' gained child 'other.1' (no node may gain children in execute mode)"
    )


def test_an_executor_whose_status_contradicts_the_tree_makes_an_agent_error() -> None:
    moved = node(
        "root",
        node("done", passes=True, attempts=1, order=0),
        node("leaf", node("other", order=2), attempts=1, order=1),
    )

    review = review_execution(prev_tree(), "leaf", executor_says("done"), text_of(moved))

    assert review.agent_error == (
        "status invariants failed: "
        "status=done but selected node 'leaf' gained children (prev=0, next=1)"
    )


def test_every_failing_layer_is_named_in_one_agent_error() -> None:
    data = prev_json()
    data["children"][0]["goal"] = "rewritten"
    data["children"][1]["children"] = [node("leaf.1")]

    review = review_execution(prev_tree(), "leaf", executor_says("done"), text_of(data))

    assert review.agent_error == (
        "child additions failed: "
        "node 'leaf' gained child 'leaf.1' (no node may gain children in execute mode); "
        "immutability failed: passed node 'done' changed in next tree; "
        "status invariants failed: "
        "status=done but selected node 'leaf' gained children (prev=0, next=1)"
    )


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (
            executor_says("decomposed"),
            "executor output does not match its schema: $.status must be one of ['done', 'retry']",
        ),
        ([], "executor output does not match its schema: $ must be object"),
        (None, "executor output does not match its schema: $ must be object"),
        (
            {"status": "done", "summary": 3},
            "executor output does not match its schema: $.summary must be string",
        ),
    ],
)
def test_executor_output_of_the_wrong_shape_is_a_runner_error(output: Any, message: str) -> None:
    with pytest.raises(AgentOutputError) as raised:
        review_execution(prev_tree(), "leaf", output, text_of(prev_json()))

    assert str(raised.value) == message


@pytest.mark.parametrize(
    "output",
    [{"status": "done"}, {"summary": "s"}, {"status": "done", "summary": "s", "extra": 1}],
)
def test_executor_output_with_missing_or_extra_fields_is_a_runner_error(output: Any) -> None:
    with pytest.raises(AgentOutputError) as raised:
        review_execution(prev_tree(), "leaf", output, text_of(prev_json()))

    assert str(raised.value).startswith("executor output does not match its schema: $ must ")


# ---------------------------------------------------------------- review_decomposition


def test_a_decomposition_adds_the_children_under_the_selected_node() -> None:
    review = review_decomposition(prev_tree(), "leaf", decomposer_says("parse", "print"), 4)

    assert (review.status, review.summary, review.agent_error) == (
        DECOMPOSED,
        "split in two",
        None,
    )
    assert review.tree is not None
    assert [
        (c.id, c.title, c.order, c.max_attempts) for c in find(review.tree, "leaf").children
    ] == [
        ("leaf.1", "parse", 0, 4),
        ("leaf.2", "print", 1, 4),
    ]
    assert not review.needs_guard


def test_a_decomposition_without_children_is_an_agent_error() -> None:
    review = review_decomposition(prev_tree(), "leaf", decomposer_says(), 3)

    assert review == Review(RETRY, "split in two", None, "decomposer returned no children")


@pytest.mark.parametrize(
    ("field", "error"),
    [
        ("title", "decomposer child 1 has an empty title"),
        ("goal", "decomposer child 1 has an empty goal"),
    ],
)
def test_a_decomposition_with_a_blank_title_or_goal_is_an_agent_error(
    field: str, error: str
) -> None:
    output = decomposer_says("parse", "print")
    output["children"][1][field] = "  "

    review = review_decomposition(prev_tree(), "leaf", output, 3)

    assert review == Review(RETRY, "split in two", None, error)


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (
            {
                "summary": "s",
                "children": [{"title": "t", "goal": "g", "acceptance": [], "next": "x"}],
            },
            "decomposer output does not match its schema: "
            "$.children[0].next must be one of ['execute', 'decompose']",
        ),
        ("children", "decomposer output does not match its schema: $ must be object"),
        (
            {"summary": None, "children": []},
            "decomposer output does not match its schema: $.summary must be string",
        ),
    ],
)
def test_decomposer_output_of_the_wrong_shape_is_a_runner_error(output: Any, message: str) -> None:
    with pytest.raises(AgentOutputError) as raised:
        review_decomposition(prev_tree(), "leaf", output, 3)

    assert str(raised.value) == message


# ---------------------------------------------------------------- conclude


def test_an_agent_error_restores_the_previous_tree_and_consumes_an_attempt() -> None:
    review = Review(RETRY, "my summary", None, "immutability failed: passed node 'done' changed")

    outcome = conclude(prev_tree(), "leaf", review, PASS)

    assert find(outcome.tree, "leaf").attempts == 2
    assert find(outcome.tree, "leaf").title == find(prev_tree(), "leaf").title
    assert (outcome.status, outcome.guard) == (RETRY, SKIPPED)
    assert outcome.summary == "immutability failed: passed node 'done' changed"
    assert outcome.agent_error == "immutability failed: passed node 'done' changed"
    assert outcome.error_kind == "agent"
    assert outcome.update is not None
    assert outcome.update.attempts_incremented == ("leaf",)


def test_done_with_a_passing_guard_passes_the_selected_node() -> None:
    review = review_execution(prev_tree(), "leaf", executor_says("done"), text_of(prev_json()))

    outcome = conclude(prev_tree(), "leaf", review, PASS)

    assert find(outcome.tree, "leaf").passes
    assert (outcome.status, outcome.guard, outcome.summary) == (DONE, PASS, "did the work")
    assert outcome.error_kind is None


def test_done_with_a_failing_guard_consumes_an_attempt() -> None:
    review = review_execution(prev_tree(), "leaf", executor_says("done"), text_of(prev_json()))

    outcome = conclude(prev_tree(), "leaf", review, FAIL)

    leaf = find(outcome.tree, "leaf")
    assert (leaf.passes, leaf.attempts) == (False, 2)
    assert (outcome.status, outcome.guard) == (DONE, FAIL)


def test_retry_consumes_an_attempt_and_records_the_guard_as_skipped() -> None:
    review = review_execution(
        prev_tree(), "leaf", executor_says("retry", "need a fixture"), text_of(prev_json())
    )

    outcome = conclude(prev_tree(), "leaf", review, PASS)

    assert find(outcome.tree, "leaf").attempts == 2
    assert (outcome.status, outcome.guard, outcome.summary) == (RETRY, SKIPPED, "need a fixture")


def test_the_agents_edits_of_open_nodes_are_kept_by_conclude() -> None:
    edited = text_of(prev_json(title="sharper", attempts=0, passes=True))
    review = review_execution(prev_tree(), "leaf", executor_says("retry"), edited)

    outcome = conclude(prev_tree(), "leaf", review, SKIPPED)

    leaf = find(outcome.tree, "leaf")
    assert (leaf.title, leaf.passes, leaf.attempts) == ("sharper", False, 2)


def test_a_decomposition_concludes_as_decomposed_without_using_an_attempt() -> None:
    review = review_decomposition(prev_tree(), "leaf", decomposer_says("a", "b"), 3)

    outcome = conclude(prev_tree(), "leaf", review, SKIPPED)

    leaf = find(outcome.tree, "leaf")
    assert [c.id for c in leaf.children] == ["leaf.1", "leaf.2"]
    assert leaf.attempts == 1
    assert (outcome.status, outcome.guard) == (DECOMPOSED, SKIPPED)


def test_a_runner_error_keeps_the_previous_tree_and_every_attempt() -> None:
    prev = prev_tree()

    outcome = conclude_runner_error(prev, "executor agent timed out")

    assert outcome.tree is prev
    assert (outcome.status, outcome.guard, outcome.summary) == (RETRY, SKIPPED, "")
    assert (outcome.update, outcome.agent_error) == (None, None)
    assert outcome.runner_error == "executor agent timed out"
    assert outcome.error_kind == "runner"


# ---------------------------------------------------------------- run_state


def test_advancing_the_run_state_records_the_iteration() -> None:
    state = RunState(run_id="run-1", next_iter=3)
    outcome = IterationOutcome(prev_tree(), RETRY, SKIPPED, "try again", None)

    assert advance_run_state(state, outcome) == RunState(
        run_id="run-1", next_iter=4, last_status=RETRY, last_summary="try again", last_guard=SKIPPED
    )


def test_a_runner_error_clears_the_summary_so_the_agent_never_sees_it() -> None:
    state = RunState(run_id="run-1", next_iter=3, last_status=RETRY, last_summary="old")

    advanced = advance_run_state(state, conclude_runner_error(prev_tree(), "guard not found"))

    assert advanced == RunState(
        run_id="run-1", next_iter=4, last_status=RETRY, last_summary="", last_guard=SKIPPED
    )
    assert "history.md" not in context_files(SELECTED, GOAL, advanced, None)


def test_run_state_json_round_trips() -> None:
    state = RunState("run-abc", 12, DONE, "all green", PASS)

    assert run_state_from_json(run_state_to_json(state)) == state


def test_run_state_json_has_exactly_the_fields_of_the_spec() -> None:
    assert run_state_to_json(RunState("run-abc", 2, RETRY, "s", SKIPPED)) == {
        "run_id": "run-abc",
        "next_iter": 2,
        "last_status": "retry",
        "last_summary": "s",
        "last_guard": "skipped",
    }
    assert run_state_to_json(RunState()) == {
        "run_id": None,
        "next_iter": 1,
        "last_status": None,
        "last_summary": "",
        "last_guard": None,
    }


def test_missing_run_state_fields_take_their_defaults() -> None:
    assert run_state_from_json({}) == RunState()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"run_id": "r", "iteration": 1}, "unknown field 'iteration'"),
        ({"run_id": 7}, "run_id must be a string or null"),
        ({"next_iter": 0}, "next_iter must be an integer >= 1"),
        ({"next_iter": True}, "next_iter must be an integer >= 1"),
        ({"next_iter": "2"}, "next_iter must be an integer >= 1"),
        ({"last_summary": None}, "last_summary must be a string"),
        (
            {"last_status": "bogus"},
            "last_status must be done, retry, decomposed or null, got 'bogus'",
        ),
        ({"last_guard": "green"}, "last_guard must be pass, fail, skipped or null, got 'green'"),
    ],
)
def test_run_state_json_that_is_not_a_run_state_names_the_field(data: Any, message: str) -> None:
    with pytest.raises(RunStateError) as raised:
        run_state_from_json(data)

    assert str(raised.value) == message


# ---------------------------------------------------------------- commit message


def test_the_commit_subject_is_exact_and_trailers_link_it_to_the_iteration() -> None:
    outcome = IterationOutcome(prev_tree(), DONE, FAIL, "did the work", None)

    record = shared_record(7, "root.2", DONE, FAIL, run_id="run-1a2b3c4d")
    subject = commit_subject("run-1a2b3c4d", 7, "root.2", outcome)
    subject_line, blank, *trailers = iteration_commit_message(subject, record, "0" * 64).split("\n")

    assert subject_line == "chore(loop): run run-1a2b3c4d iter 7 node root.2 status=done guard=fail"
    assert blank == ""
    for line in (
        "Runner-Run: run-1a2b3c4d",
        "Runner-Iter: 7",
        "Runner-Node: root.2",
        "Runner-Status: done",
        "Runner-Guard: fail",
    ):
        assert line in trailers


@pytest.mark.parametrize(
    ("status", "guard"),
    [(DONE, PASS), (DONE, SKIPPED), (RETRY, SKIPPED), (DECOMPOSED, SKIPPED)],
)
def test_the_commit_subject_names_status_and_guard(
    status: AgentStatus, guard: GuardOutcome
) -> None:
    outcome = IterationOutcome(prev_tree(), status, guard, "", None)

    subject = commit_subject("r", 1, "leaf", outcome)

    assert (
        subject == f"chore(loop): run r iter 1 node leaf status={status.value} guard={guard.value}"
    )


def test_review_execution_resets_max_attempts_the_agent_lowered() -> None:
    """max_attempts of an existing node is the runner's: the agent's edit is undone,
    so it can neither raise it past being stuck nor lower it below the counted attempts."""
    prev = tree("root", tree("leaf", attempts=2))
    edited = node("root", node("leaf", attempts=0, max_attempts=1))
    review = review_execution(prev, "leaf", {"status": "retry", "summary": "s"}, text_of(edited))
    assert review.agent_error is None
    outcome = conclude(prev, "leaf", review, GuardOutcome.SKIPPED)
    kept = prev.children[0].max_attempts
    assert outcome.tree.children[0].max_attempts == kept
    assert messages(invariant_findings(outcome.tree)) == ()
