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


def _items(body: str) -> list[str]:
    """The questions of a body, one per paragraph (a list item is one too)."""
    items: list[str] = []
    for block in body.split("\n\n"):
        lines = [line for line in block.strip("\n").splitlines() if line.strip()]
        current: list[str] = []
        for line in lines:
            if line.lstrip().startswith(("- ", "* ")) and current:
                items.append("\n".join(current))
                current = []
            current.append(line)
        if current:
            items.append("\n".join(current))
    return items


def _key(question: str) -> str:
    """A question as compared: its words, lower-case, without a list marker or quote mark."""
    words = " ".join(question.split()).lower()
    return words.removeprefix("> ").removeprefix("- ").removeprefix("* ").strip()


def answered_keys(guidance: str | None) -> frozenset[str]:
    """The questions an answer in guidance.md quotes (`runner answer` quotes each with `> `)."""
    quoted = [line for line in (guidance or "").splitlines() if line.startswith(">")]
    body = "\n".join(line[1:].removeprefix(" ") for line in quoted)
    return frozenset(_key(item) for item in _items(body))


def open_questions(text: str | None, guidance: str | None = None) -> str | None:
    """The questions `text` (questions.md, None when absent) holds past its header, each once
    (two jobs asking the same are folded) and without those an answer in `guidance` quotes
    (an answer already given); None when none is left."""
    body = (text or "").removeprefix(QUESTIONS_HEADER).strip()
    done = answered_keys(guidance)
    kept: list[str] = []
    seen: set[str] = set()
    for item in _items(body):
        key = _key(item)
        if key in seen or key in done:
            continue
        seen.add(key)
        kept.append(item)
    return "\n\n".join(kept) + "\n" if kept else None


def new_questions(before: str | None, after: str | None) -> str | None:
    """The open questions `after` holds that `before` did not (an agent appends), or None."""
    old, new = (open_questions(before) or "").strip(), (open_questions(after) or "").strip()
    added = new.removeprefix(old).strip() if new.startswith(old) else new
    return f"{added}\n" if added else None


def answered(questions: str | None, guidance: str | None, answer: str) -> tuple[str, str]:
    """questions.md without its open questions, and guidance.md with the answer to them (it
    quotes each, so a copy that comes back, with a job that merges later, stays answered)."""
    asked = open_questions(questions, guidance)
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


def answer_commit_message(run_id: str, actor: str, asked: str | None = None) -> str:
    """The commit of a `runner answer`: questions closed, the answer in the guidance; its body
    names the questions it answered."""
    lines = render_trailers(((RUN, run_id), (ACTOR, actor)))
    items = _items(asked or "")
    named = "".join(f"answered: {' '.join(item.split())[:200]}\n" for item in items)
    return f"chore(runner): answer run {run_id}\n\n{named}{chr(10) if named else ''}{lines}"
