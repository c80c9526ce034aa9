"""Operator guidance (`runner tell`): how notes join guidance.md and where the prompt puts them."""

from __future__ import annotations

import pytest

from runner_core.prompt.pack import DROP_ORDER, TRUNCATED_MARK, build_prompt_pack
from runner_core.run.guidance import with_guidance

REQUIRED = {"contract": "C", "goal": "G", "selected": "S", "output": "O"}


def test_the_first_note_is_the_whole_file() -> None:
    assert with_guidance(None, "  Use pytest.\n\n") == "Use pytest.\n"


def test_later_notes_are_appended_as_paragraphs() -> None:
    first = with_guidance(None, "One.")
    assert with_guidance(first, "Two.") == "One.\n\nTwo.\n"


def test_an_empty_note_is_refused() -> None:
    with pytest.raises(ValueError, match="the guidance is empty"):
        with_guidance(None, "  \n")


def test_guidance_comes_right_after_the_goal() -> None:
    pack = build_prompt_pack({**REQUIRED, "guidance": "Mind the API.", "history": "H"}, 10_000)
    assert pack.included[:4] == ("contract", "goal", "guidance", "history")
    assert pack.text.index("## Project goal") < pack.text.index("## Operator guidance")


def test_guidance_is_never_dropped_but_cut_after_the_goal() -> None:
    sections = {**REQUIRED, "goal": "g" * 500, "guidance": "n" * 500, "tree": "t" * 500}
    pack = build_prompt_pack(sections, 400)
    assert "guidance" not in DROP_ORDER
    assert pack.dropped == ("tree",)
    assert pack.truncated[:2] == ("goal", "guidance")
    assert "guidance" in pack.included
    assert TRUNCATED_MARK in pack.text
