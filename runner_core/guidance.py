"""Operator guidance (`runner tell`): how a note joins `.runner/state/guidance.md`.

Decides the file's header and how each note is appended; the prompt pack decides where the
guidance goes in the prompt. Never reads or writes the file itself.
"""

from __future__ import annotations

GUIDANCE_HEADER = "# Operator guidance\n\nNotes from the operator, oldest first.\n"


def with_guidance(current: str | None, note: str) -> str:
    """`current` (the file's text, None when absent) with `note` appended as a paragraph."""
    text = note.strip()
    if not text:
        raise ValueError("the guidance is empty; say what the agents should know")
    base = (current if current is not None and current.strip() else GUIDANCE_HEADER).rstrip("\n")
    return f"{base}\n\n{text}\n"
