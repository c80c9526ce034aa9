"""The agents' questions in `.runner/state/questions.md` are shown whenever there are any: the
header `runner init` writes is not a question, anything below it is."""

from __future__ import annotations

from runner_core.run.guidance import QUESTIONS_HEADER, asked_questions


def test_the_scaffolded_header_alone_asks_nothing() -> None:
    assert asked_questions(QUESTIONS_HEADER) is None
    assert asked_questions(None) is None
    assert asked_questions("\n\n") is None


def test_questions_below_the_header_are_shown_without_it() -> None:
    assert asked_questions(QUESTIONS_HEADER + "\n- Which database?\n") == "\n- Which database?\n"


def test_a_file_without_the_header_is_all_questions() -> None:
    assert asked_questions("Which database?\n") == "Which database?\n"
