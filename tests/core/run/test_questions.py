"""Agents' questions and `runner answer`: which questions are open, which are new after an
iteration, and how an answer joins the guidance the next prompt carries."""

from __future__ import annotations

import pytest

from runner_core.run.questions import (
    QUESTIONS_HEADER,
    answer_commit_message,
    answered,
    new_questions,
    open_questions,
)
from runner_core.views.steering import question_lines


def test_the_header_alone_is_no_open_question() -> None:
    assert open_questions(None) is None
    assert open_questions(QUESTIONS_HEADER) is None
    assert open_questions(QUESTIONS_HEADER + "\n- Which DB?\n") == "- Which DB?\n"
    assert open_questions("Which database?\n") == "Which database?\n"


def test_new_questions_are_what_an_iteration_appended() -> None:
    before = QUESTIONS_HEADER + "- Which DB?\n"
    assert new_questions(before, before) is None
    assert new_questions(before, before + "- Which port?\n") == "- Which port?\n"
    assert new_questions(None, QUESTIONS_HEADER + "- A?\n") == "- A?\n"
    assert new_questions(before, QUESTIONS_HEADER) is None


def test_an_answer_closes_the_questions_and_joins_the_guidance_quoting_them() -> None:
    questions, guidance = answered(QUESTIONS_HEADER + "- Which DB?\n", "Be brief.\n", "SQLite.")
    assert questions == QUESTIONS_HEADER
    assert guidance == ("Be brief.\n\nAnswer to the agents' questions:\n> - Which DB?\n\nSQLite.\n")


def test_an_answer_without_open_questions_or_text_is_refused() -> None:
    with pytest.raises(ValueError, match="no open questions"):
        answered(QUESTIONS_HEADER, None, "x")
    with pytest.raises(ValueError, match="the answer is empty"):
        answered("Why?\n", None, "  ")


def test_views_show_questions_only_while_there_are_some() -> None:
    assert question_lines(QUESTIONS_HEADER) == ()
    assert question_lines("Why?\n") == (
        "questions (the agents asked; reply with 'runner answer TEXT'):",
        "  Why?",
    )


# ------------------------------------------------------------ answered, folded


def test_two_jobs_asking_the_same_question_show_it_once() -> None:
    text = QUESTIONS_HEADER + "\n- Which port?\n\n- which   port?\n\n- What name?\n"
    assert open_questions(text) == "- Which port?\n\n- What name?\n"


def test_an_answered_question_that_comes_back_with_a_later_merge_stays_answered() -> None:
    asked = QUESTIONS_HEADER + "\n- Which port?\n"
    remaining, guidance = answered(asked, None, "8080")
    assert open_questions(remaining, guidance) is None
    # A parallel job that started before the answer merges its copy of questions.md back.
    merged = asked + "\n- What name?\n"
    assert open_questions(merged, guidance) == "- What name?\n"


def test_the_answers_commit_says_which_questions_it_answered() -> None:
    message = answer_commit_message("run-1", "me", "- Which port?\n\n- What name?\n")
    assert "answered: - Which port?\nanswered: - What name?\n" in message
