"""Properties of what a text view prints to a terminal: whatever the agent wrote, nothing a
terminal acts on is left but line breaks and tabs, and text that needs no escaping is kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core.views.text import terminal_text


@given(st.text())
def test_terminal_text_leaves_no_character_a_terminal_acts_on(text: str) -> None:
    """Whatever the agent wrote, only printable characters, line breaks and tabs are printed."""
    printed = terminal_text(text)
    assert all(char.isprintable() or char in "\n\t" for char in printed)
    assert printed.count("\n") == text.count("\n")


@given(st.text())
def test_printable_text_and_its_line_structure_are_unchanged(text: str) -> None:
    """Text without anything to escape is printed as it was written."""
    safe = "".join(char for char in text if char.isprintable() or char in "\n\t")
    assert terminal_text(safe) == safe
