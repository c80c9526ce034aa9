"""Scenarios of the end-to-end suite where a loop with `[parallel] slots` once did not end as the
one-slot loop does: each is the smallest run that showed it, kept so it stays fixed.

The one-slot counterpart of each is named in its docstring; these set `[parallel] slots`
themselves, whatever RUNNER_TEST_SLOTS says.
"""

from __future__ import annotations

import json

from runner_core.run.questions import QUESTIONS_HEADER
from tests.helpers.e2e import PYTHON, Project, node

DONE = {"status": "done", "summary": "did it"}
TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])


def test_a_question_asked_by_a_parallel_job_fires_on_question(project: Project) -> None:
    """As test_steering's questions scenario, with two slots: a job's new question fires the
    `on_question` hook once its iteration has merged, as a one-slot step's does."""
    seen = project.harness / "question.json"
    hook = [PYTHON, "-c", f"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())"]
    project.prepare(TWO_LEAVES, hooks={"on_question": hook}, parallel={"slots": 2})
    asked = QUESTIONS_HEADER + "- Which database?\n"
    project.agent_script_by_node(
        {
            ("root.1", 1): {"files": {".runner/state/questions.md": asked}, "output": DONE},
            ("root.2", 1): {"output": DONE},
        }
    )

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    events = (project.iter_dir(1).parent / "events.jsonl").read_text(encoding="utf-8")
    types = [json.loads(line)["type"] for line in events.splitlines()]
    assert "question" in types
    event = json.loads(seen.read_text(encoding="utf-8"))
    assert (event["type"], event["questions"]) == ("question", "- Which database?\n")
