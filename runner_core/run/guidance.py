"""Operator guidance (`runner tell`): how a note joins `.runner/state/guidance.md`.

Decides how each note is appended: a paragraph, oldest first, and nothing else, since the
file becomes the prompt's "Operator guidance" section as it is. The prompt pack decides where
that section goes. Never reads or writes the file itself.
"""

from __future__ import annotations

from runner_core.run.trailers import ACTOR, RUN, render_trailers


def with_guidance(current: str | None, note: str) -> str:
    """`current` (the file's text, None when absent) with `note` appended as a paragraph."""
    text = note.strip()
    if not text:
        raise ValueError("the guidance is empty; say what the agents should know")
    base = (current or "").strip("\n")
    return f"{base}\n\n{text}\n" if base.strip() else f"{text}\n"


QUESTIONS_HEADER = "# Open questions\n\nAgents append questions for a human here.\n"


def asked_questions(text: str | None) -> str | None:
    """The questions agents appended to questions.md (`text`, None when absent): the file
    without the header `runner init` writes, or None when nothing is asked."""
    if text is None:
        return None
    asked = text.removeprefix(QUESTIONS_HEADER)
    return asked if asked.strip() else None


def guidance_commit_message(run_id: str, actor: str) -> str:
    """The commit of a `runner tell`: subject, then who told which run."""
    lines = render_trailers(((RUN, run_id), (ACTOR, actor)))
    return f"chore(runner): tell run {run_id}\n\n{lines}"
