"""`runner node replace --from FILE` refuses a plan in the terms of the file the user wrote:
the fields it lacks by name, a field of the wrong type by its name, never the path of the
decomposer document the plan is checked as."""

from __future__ import annotations

import pytest

from runner_core.run.operations import OperationError, plan_from_json

PLAN = {"title": "T", "goal": "G", "acceptance": ["A"], "next": "execute"}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(
            {"title": "x"},
            "node replace: --from lacks the required field(s) goal, acceptance, next "
            "(a plan is {title, goal, acceptance, next[, children]})",
            id="only a title",
        ),
        pytest.param(
            {"title": "x", "goal": "g", "acceptance": ["a"]},
            "node replace: --from lacks the required field(s) next "
            "(a plan is {title, goal, acceptance, next[, children]})",
            id="no next",
        ),
        pytest.param(
            {**PLAN, "goal": 1},
            "node replace: --from: goal must be string",
            id="goal of the wrong type",
        ),
        pytest.param(
            {**PLAN, "next": "later"},
            "node replace: --from: next must be one of ['execute', 'decompose']",
            id="unknown next",
        ),
    ],
)
def test_a_plan_is_refused_in_the_users_terms(document: object, message: str) -> None:
    with pytest.raises(OperationError) as raised:
        plan_from_json(document)

    assert str(raised.value) == message
    assert "$.children[0]" not in str(raised.value)


def test_a_bad_child_is_named_by_its_place_in_the_files_children() -> None:
    with pytest.raises(OperationError) as raised:
        plan_from_json({**PLAN, "children": [{"title": "c"}]})

    assert "$.children[0]" in str(raised.value)
