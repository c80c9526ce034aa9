"""How the operator's side of a run reads in text: open questions under a view, and the
lines `runner config`, `runner answer` and `runner stop` print. Renders; decides nothing.
"""

from __future__ import annotations

from runner_core.run.questions import open_questions


def question_lines(questions_md: str | None, guidance_md: str | None = None) -> tuple[str, ...]:
    """The block a view shows while agents have open questions (each once, none an answer in
    `guidance_md` quotes); () when there are none."""
    asked = open_questions(questions_md, guidance_md)
    if asked is None:
        return ()
    head = "questions (the agents asked; reply with 'runner answer TEXT'):"
    return (head, *(f"  {line}" for line in asked.rstrip().splitlines()))


def config_line(verb: str, key: str, run_id: str, changed: bool) -> str:
    """`config: op=set key=<key> run=<id>`, `unchanged` when the file already said so."""
    return f"config: op={verb} key={key} run={run_id}" + ("" if changed else " unchanged")
