"""Agents' questions (`.runner/state/questions.md`) and the operator's answers (`runner answer`).

Decides which questions are open (what the file holds past its header), which appeared since
an iteration began (an `on_question` hook), and how an answer joins the next prompt: as a
paragraph of the operator's guidance quoting the questions it answers, which leave the file.
Never reads or writes the files.
"""

from __future__ import annotations

from runner_core.run.guidance import with_guidance
from runner_core.run.trailers import ACTOR, RUN, render_trailers

QUESTIONS_HEADER = "# Open questions\n\nAgents append questions for a human here.\n"


def open_questions(text: str | None) -> str | None:
    """The questions `text` (questions.md, None when absent) holds past its header, or None."""
    body = (text or "").removeprefix(QUESTIONS_HEADER).strip()
    return f"{body}\n" if body else None


def new_questions(before: str | None, after: str | None) -> str | None:
    """The open questions `after` holds that `before` did not (an agent appends), or None."""
    old, new = (open_questions(before) or "").strip(), (open_questions(after) or "").strip()
    added = new.removeprefix(old).strip() if new.startswith(old) else new
    return f"{added}\n" if added else None


def answered(questions: str | None, guidance: str | None, answer: str) -> tuple[str, str]:
    """questions.md without its open questions, and guidance.md with the answer to them."""
    asked = open_questions(questions)
    if asked is None:
        raise ValueError(
            "there are no open questions in .runner/state/questions.md "
            "(use 'runner tell' to give guidance)"
        )
    reply = answer.strip()
    if not reply:
        raise ValueError("the answer is empty; say what the agents should know")
    quoted = "\n".join(f"> {line}" if line else ">" for line in asked.splitlines())
    note = f"Answer to the agents' questions:\n{quoted}\n\n{reply}"
    return QUESTIONS_HEADER, with_guidance(guidance, note)


def answer_commit_message(run_id: str, actor: str) -> str:
    """The commit of a `runner answer`: questions closed, the answer in the guidance."""
    lines = render_trailers(((RUN, run_id), (ACTOR, actor)))
    return f"chore(runner): answer run {run_id}\n\n{lines}"
