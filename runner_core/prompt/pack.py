"""The prompt pack: what one agent session is told, within a byte budget.

Decides section order, which sections are dropped when the pack is over budget (tree,
assumptions, questions, history, tests, failure, in that order) and what is cut after that. The
texts come in as values: the shell reads templates and context files, this only arranges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.tree.model import Node, NodeNext, sort_key
from runner_core.tree.selection import is_stuck

SECTION_ORDER: tuple[str, ...] = (
    "contract",
    "goal",
    "guidance",
    "history",
    "failure",
    "selected",
    "tests",
    "tree",
    "assumptions",
    "questions",
    "output",
)
SECTION_TITLES: PMap[str, str] = pmap(
    {
        "contract": "Runner contract",
        "goal": "Project goal",
        "guidance": "Operator guidance",
        "history": "Previous attempt",
        "failure": "Guard failure of the previous attempt",
        "selected": "Selected node",
        "tests": "Tests that judge this node",
        "tree": "Task tree summary",
        "assumptions": "Assumptions so far",
        "questions": "Open questions",
        "output": "Output contract",
    }
)
REQUIRED_SECTIONS = frozenset({"contract", "goal", "selected", "output"})
DROP_ORDER: tuple[str, ...] = ("tree", "assumptions", "questions", "history", "tests", "failure")
# When dropping is not enough, the user-sized required sections are cut, goal first; the
# runner's own contract and output contract stay whole so the agent can still answer. The
# operator's guidance (`runner tell`) is optional but never dropped: it is cut after the goal.
TRUNCATE_ORDER: tuple[str, ...] = ("goal", "guidance", "selected")
TRUNCATED_MARK = "\n[truncated]"
DEFAULT_PROMPT_BUDGET = 40_000
TREE_OUTLINE_MAX_LINES = 200
# The variables a prompt template has beside one per section (template_facts, docs/eval.md).
TEMPLATE_FACTS: tuple[str, ...] = (
    "acceptance",
    "budget",
    "guard_command",
    "iteration",
    "node",
    "path",
    "role",
)


@attrs.frozen(slots=True)
class PromptTemplate:
    """A repository's prompt template (`.runner/prompts/<role>.md.j2`), compiled by the shell.

    `sections`: the prompt sections it names (only those are sent); `fixed_bytes`: the size of
    its own text, rendered with every variable empty, which the budget leaves room for;
    `render`: the compiled template, a pure function of its variables."""

    path: str
    sha256: str
    sections: frozenset[str]
    fixed_bytes: int
    render: Callable[[Mapping[str, object]], str] = attrs.field(eq=False, repr=False)


@attrs.frozen(slots=True)
class PromptPack:
    text: str
    included: tuple[str, ...]
    dropped: tuple[str, ...]
    truncated: tuple[str, ...]

    @property
    def size_bytes(self) -> int:
        return len(self.text.encode("utf-8"))


SECTION_SEPARATOR = "\n"


def section_blocks(sections: Mapping[str, str]) -> dict[str, str]:
    """Each section as the prompt shows it (its heading, then its text), in SECTION_ORDER; a
    prompt template (runner_shell.step.prompt_templates) receives these as its variables."""
    return {
        name: f"## {SECTION_TITLES[name]}\n\n{sections[name].rstrip()}\n"
        for name in SECTION_ORDER
        if name in sections
    }


def _render(sections: Mapping[str, str]) -> str:
    return SECTION_SEPARATOR.join(section_blocks(sections).values())


def _size(sections: Mapping[str, str]) -> int:
    return len(_render(sections).encode("utf-8"))


def _cut(text: str, keep_bytes: int) -> str:
    kept = text.encode("utf-8")[: max(keep_bytes, 0)].decode("utf-8", errors="ignore")
    return kept + TRUNCATED_MARK


def build_prompt_pack(
    sections: Mapping[str, str | None],
    budget_bytes: int,
    required: frozenset[str] = REQUIRED_SECTIONS,
) -> PromptPack:
    """Render the sections in their order, dropping and then truncating to fit the budget.

    Sections whose text is None or blank are left out (not "dropped"). Raises `ValueError`
    when a `required` section is missing.
    """
    current, dropped, truncated = _fit(sections, budget_bytes, required)
    return PromptPack(
        text=_render(current),
        included=tuple(name for name in SECTION_ORDER if name in current),
        dropped=dropped,
        truncated=truncated,
    )


def _fit(
    sections: Mapping[str, str | None], budget_bytes: int, required: frozenset[str]
) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
    """The sections that fit the budget, as they are sent; which were dropped and cut."""
    missing = sorted(name for name in required if not (sections.get(name) or "").strip())
    if missing:
        raise ValueError(f"prompt pack is missing required sections: {', '.join(missing)}")
    unknown = sorted(set(sections) - set(SECTION_ORDER))
    if unknown:
        raise ValueError(f"unknown prompt sections: {', '.join(unknown)}")
    current: dict[str, str] = {
        name: text for name, text in sections.items() if text is not None and text.strip()
    }
    dropped: list[str] = []
    for name in DROP_ORDER:
        if _size(current) <= budget_bytes:
            break
        if name in current:
            del current[name]
            dropped.append(name)
    truncated: list[str] = []
    for name in TRUNCATE_ORDER:
        over = _size(current) - budget_bytes
        if over <= 0:
            break
        if name not in current:
            continue
        # Measured as rendered: trailing whitespace is not printed, so it cannot be cut.
        body = current[name].rstrip()
        keep = len(body.encode("utf-8")) - over - len(TRUNCATED_MARK.encode("utf-8"))
        current[name] = _cut(body, keep)
        truncated.append(name)
    return current, tuple(dropped), tuple(truncated)


def selected_section(node: Node, path: str) -> str:
    acceptance = "\n".join(f"- {item}" for item in node.acceptance) or "- (none given)"
    return (
        f"path: {path}\n"
        f"id: {node.id}\n"
        f"title: {node.title}\n"
        f"attempts: {node.attempts}/{node.max_attempts}\n"
        f"\ngoal:\n{node.goal}\n"
        f"\nacceptance:\n{acceptance}\n"
    )


def tree_outline(tree: Node, selected_id: str, max_lines: int = TREE_OUTLINE_MAX_LINES) -> str:
    """An indented outline of the tree in selection order, at most `max_lines` nodes."""
    lines: list[str] = []
    total = 0
    stack: list[tuple[Node, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        total += 1
        if len(lines) < max_lines:
            mark = "x" if node.passes else ("!" if node.is_leaf and is_stuck(node) else " ")
            kind = " (decompose)" if node.is_leaf and node.next is NodeNext.DECOMPOSE else ""
            here = "  <- selected" if node.id == selected_id else ""
            lines.append(
                f"{'  ' * depth}- [{mark}] {node.id}: {node.title}{kind} "
                f"({node.attempts}/{node.max_attempts}){here}"
            )
        ordered = sorted(node.children, key=sort_key, reverse=True)
        stack.extend((child, depth + 1) for child in ordered)
    if total > len(lines):
        lines.append(f"... ({total - len(lines)} more nodes not shown)")
    return "\n".join(lines) + "\n"


def nested(text: str | None) -> str | None:
    """`text` (a user's or an agent's markdown) as the body of a `##` section: each heading
    outside a code fence two levels deeper (`# Goal` becomes `### Goal`), so the prompt's
    heading levels nest."""
    if text is None:
        return None
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            fence = None if fence == marker else (fence or marker)
        elif fence is None and re.match(r"#{1,6}(\s|$)", stripped) and len(line) == len(stripped):
            line = "##" + line if not line.startswith("#####") else "######" + line.lstrip("#")
        out.append(line)
    return "\n".join(out)


def templated_prompt(
    template: PromptTemplate,
    sections: Mapping[str, str | None],
    budget_bytes: int,
    facts: Mapping[str, object],
) -> str:
    """The prompt a repository's template makes: only the sections it names are sent (and
    counted against the budget, less the template's own text), trimmed as the built-in
    prompt's are; each reaches it as its block of text, "" when absent or dropped. `facts`:
    the other variables (template_facts)."""
    named = {name: text for name, text in sections.items() if name in template.sections}
    budget = max(budget_bytes - template.fixed_bytes, 0)
    kept, _, _ = _fit(named, budget, REQUIRED_SECTIONS & template.sections)
    blocks = section_blocks(kept)
    values: dict[str, object] = {name: blocks.get(name, "") for name in SECTION_ORDER}
    values.update(facts)
    return template.render(values)
