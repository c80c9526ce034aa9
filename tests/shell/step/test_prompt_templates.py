"""The shipped prompt templates make the built-in prompt byte for byte; a template that cannot
render is one line naming its file, line and variable; sections a template leaves out are not
sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.prompt.pack import (
    SECTION_ORDER,
    build_prompt_pack,
    templated_prompt,
)
from runner_core.tree.model import AgentRole
from runner_shell.errors import UserFacingError
from runner_shell.step.prompt_templates import SAMPLE_FACTS, compile_template, shipped_template

BASE = {
    "contract": "You are the agent.\nRules follow.\n",
    "goal": "# Selected node root.1\n\nDo it.\n\n# Project goal\n\nA calculator.\n",
    "selected": "path: root/root.1\nid: root.1\n",
    "tree": "- [ ] root: Project goal (0/3)\n  - [ ] root.1: A (0/3)  <- selected\n",
    "output": "Write JSON to out.json.\n",
}
# Iterations as the builder sees them: a first attempt, a retry's history, a guard failure,
# ratchet tests and guidance, notes files, and budgets that drop and then cut sections.
CASES = [
    (BASE, 40_000),
    ({**BASE, "history": "Tried X; next Y.\n"}, 40_000),
    ({**BASE, "failure": "FAIL test_add\n" * 20, "tests": "- tests/t.py::test_add\n"}, 40_000),
    ({**BASE, "guidance": "Prefer small commits.\n", "assumptions": "# A\n- a\n"}, 40_000),
    ({**BASE, "questions": "# Q\n- why?\n", "history": "   \n"}, 40_000),
    ({**BASE, "failure": "F" * 3000, "tree": "T" * 3000, "history": "H" * 500}, 1_200),
    ({**BASE, "goal": "é" * 5000, "guidance": "g" * 2000}, 900),
]


@pytest.mark.parametrize("role", list(AgentRole))
@pytest.mark.parametrize(("sections", "budget"), CASES)
def test_shipped_template_renders_the_builtin_prompt_byte_for_byte(
    role: AgentRole, sections: dict[str, str], budget: int
) -> None:
    template = compile_template("t.md.j2", shipped_template(role).encode())
    assert template.sections == frozenset(SECTION_ORDER)
    builtin = build_prompt_pack(sections, budget).text
    assert templated_prompt(template, sections, budget, SAMPLE_FACTS) == builtin


def test_a_section_the_template_leaves_out_is_not_sent_nor_counted() -> None:
    source = "Custom for {{ node.id }} at {{ path }}.\n{{ selected }}{{ output }}"
    template = compile_template("t.md.j2", source.encode())
    sections = {**BASE, "failure": "F" * 5000}
    text = templated_prompt(template, sections, 700, SAMPLE_FACTS)
    assert text.startswith("Custom for root.1 at root/root.1.\n## Selected node\n\n")
    assert "F" * 10 not in text and "You are the agent" not in text
    assert "[truncated]" not in text  # the failure log it never names takes no room


def test_the_budget_still_cuts_what_a_template_includes() -> None:
    template = compile_template("t.md.j2", b"{{ goal }}{{ selected }}{{ output }}")
    text = templated_prompt(template, {**BASE, "goal": "g" * 5000}, 600, SAMPLE_FACTS)
    assert "\n[truncated]\n" in text and len(text.encode()) <= 600


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ goal }}\n\n{{ nope }}\n", "p.md.j2:3: unknown variable 'nope'"),
        ("ok\n{% if goal %}\n", "p.md.j2:2: Unexpected end of template"),
        ("{{ node.id }}\n{{ node.missing.deeper }}\n", "p.md.j2:2: 'dict object' has no"),
        ("{{ goal.__class__.__mro__ }}", "p.md.j2:1: access to attribute '__class__'"),
        ("a\n{{ iteration / 0 }}\n", "p.md.j2:2: ZeroDivisionError"),
    ],
)
def test_a_template_that_does_not_render_is_one_line_naming_file_and_line(
    source: str, expected: str
) -> None:
    with pytest.raises(UserFacingError) as raised:
        compile_template("p.md.j2", source.encode())
    message = str(raised.value)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_a_template_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(UserFacingError, match=r"^p\.md\.j2: is not UTF-8 text"):
        compile_template("p.md.j2", b"\xff{{ goal }}")


def test_the_shipped_templates_are_package_files() -> None:
    for role in AgentRole:
        assert (Path(__file__).parents[3] / "runner_shell/step/templates").joinpath(
            f"{role.value}.md.j2"
        ).read_text() == shipped_template(role)
