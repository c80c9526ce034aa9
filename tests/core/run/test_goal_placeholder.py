"""GOAL.md as `runner init` scaffolds it states no goal: start and step refuse it, since with a
paid agent every session on it would be spent on nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner_core.run.identity import GOAL_PLACEHOLDER, empty_goal_problem, with_run_id


def test_the_scaffolded_placeholder_is_refused_with_the_fix() -> None:
    problem = empty_goal_problem(GOAL_PLACEHOLDER)

    assert problem is not None
    assert "placeholder" in problem
    assert "edit .runner/GOAL.md" in problem


def test_the_placeholder_under_a_run_id_is_still_refused() -> None:
    assert empty_goal_problem(with_run_id(GOAL_PLACEHOLDER, "run-1")) is not None


def test_the_placeholder_reflowed_or_without_its_heading_is_still_refused() -> None:
    words = GOAL_PLACEHOLDER.replace("# Goal", "").split()

    assert empty_goal_problem("\n".join(words) + "\n") is not None
    assert empty_goal_problem("## My goal\n\n" + "  ".join(words)) is not None


@pytest.mark.parametrize(
    "text",
    [
        "# Goal\n\nImplement add and multiply.\n",
        GOAL_PLACEHOLDER + "\nImplement add and multiply.\n",
        "Describe what the agents should achieve.\n",
    ],
)
def test_a_goal_someone_wrote_is_accepted(text: str) -> None:
    assert empty_goal_problem(text) is None


@given(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=40))
def test_any_written_sentence_beside_the_placeholder_is_a_goal(sentence: str) -> None:
    """The placeholder plus any word of the user's own is a goal: only the untouched
    placeholder (in any layout) is refused."""
    assert empty_goal_problem(f"{GOAL_PLACEHOLDER}\n{sentence}\n") is None
