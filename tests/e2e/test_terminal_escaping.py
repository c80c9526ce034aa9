"""End-to-end: what an agent wrote (a title, a summary, its output) reaches the
terminal through `runner show`, `history`, `status`, `report` and `follow` with its
control and bidi characters escaped; `--json` documents keep the text as written."""

from __future__ import annotations

import json

import pytest

from tests.helpers.e2e import Project, child_spec, node

OSC = "\x1b]0;pwned\x07"
RLO = "\u202e"
ISOLATE = "\u2066"
HOSTILE = f"{OSC}txt.{RLO}exe{ISOLATE}\x1b[2J\r"
ESCAPED = "\\x1b]0;pwned\\x07txt.\\u202eexe\\u2066\\x1b[2J\\r"
TITLE = f"Write {RLO}A{ISOLATE}"


def hostile_run(project: Project) -> None:
    """A decomposer whose children's title, summary and output carry escape sequences and bidi
    overrides, then an executor that does the same."""
    project.prepare(node("root", next_="decompose"))
    child = {**child_spec("A"), "title": TITLE}
    project.agent_script(
        {
            1: {"stdout": f"{HOSTILE}\n", "output": {"summary": HOSTILE, "children": [child]}},
            2: {
                "stdout": f"{HOSTILE}\n",
                "output": {"status": "done", "summary": HOSTILE},
            },
        }
    )
    project.guard_script([{"stdout": f"{HOSTILE}\n"}])
    result = project.runner("loop", "--max-steps", "2")
    assert result.returncode == 0, result.stderr
    assert project.meta(2)["status"] == "done", project.meta(2)


# Each view, and whether the agent's text is among what it prints in this run.
VIEWS = {
    "show 1": (("show", "1"), True),
    "show 2": (("show", "2"), True),
    "history": (("history",), False),
    "status": (("status",), True),
    "report": (("report",), False),
    "follow": (("follow", "-n", "100"), True),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_text_view_prints_the_agent_s_escape_sequences_and_bidi_characters_escaped(
    project: Project, view: str
) -> None:
    hostile_run(project)

    args, shows_agent_text = VIEWS[view]

    result = project.runner(*args)

    assert result.returncode == 0, result.stderr
    for char in ("\x1b", "\x07", "\r", RLO, ISOLATE):
        assert char not in result.stdout, view
    assert ("\\u202e" in result.stdout) is shows_agent_text


def test_show_prints_the_summary_and_the_log_line_escaped_in_full(project: Project) -> None:
    hostile_run(project)

    out = project.runner("show", "2").stdout.splitlines()

    # A summary is flattened to one line first: the carriage return is whitespace there.
    assert "summary: " + ESCAPED.removesuffix("\\r") in out
    assert ESCAPED in out


def test_the_json_documents_keep_the_agent_s_text_as_written(project: Project) -> None:
    hostile_run(project)

    shown = json.loads(project.runner("show", "2", "--json").stdout)
    status = json.loads(project.runner("status", "--json").stdout)

    assert shown["output"]["summary"] == HOSTILE
    assert TITLE in json.dumps(status, ensure_ascii=False)
