"""Prompt templates a repository owns: `.runner/prompts/<role>.md.j2`, Jinja2 in a sandbox.

Reads and compiles a role's template when the repository has one (else the runner's built-in
prompt is used), refuses one that does not render as one line naming the file, the line and
the variable, and writes the shipped templates for `runner init --prompts`. Jinja2 is
imported only here, and only when a repository has templates: a run without them pays nothing.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from runner_core.prompt.pack import SECTION_ORDER, TEMPLATE_FACTS, PromptTemplate
from runner_core.tree.model import AgentRole
from runner_shell.errors import UserFacingError
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import Places, RunnerPaths

if TYPE_CHECKING:
    from jinja2 import Template

PROMPTS_DIR = "prompts"
SHIPPED = Path(__file__).parent / "templates"
KNOWN_VARIABLES = frozenset(SECTION_ORDER) | frozenset(TEMPLATE_FACTS)
# What a trial render gives each variable, so a template that cannot render fails before any
# agent runs rather than in the middle of a loop.
_SAMPLE_NODE = {
    "id": "root.1",
    "title": "A node",
    "goal": "A goal.",
    "acceptance": ["An acceptance line."],
    "attempts": 0,
    "max_attempts": 3,
}
SAMPLE_FACTS: Mapping[str, object] = {
    "acceptance": ["An acceptance line."],
    "budget": 40_000,
    "guard_command": "just ci",
    "iteration": 1,
    "node": _SAMPLE_NODE,
    "path": "root/root.1",
    "role": "executor",
}


def template_name(role: AgentRole) -> str:
    return f"{role.value}.md.j2"


def prompts_dir(paths: Places) -> Path:
    return paths.runner_dir / PROMPTS_DIR


def shipped_template(role: AgentRole) -> str:
    return (SHIPPED / template_name(role)).read_text(encoding="utf-8")


def write_shipped_templates(paths: RunnerPaths, force: bool) -> list[Path]:
    """`runner init --prompts`: the shipped templates into `.runner/prompts/`; an existing one
    is kept unless `force`. Returns the files written."""
    written = []
    for role in AgentRole:
        target = prompts_dir(paths) / template_name(role)
        if target.exists() and not force:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, shipped_template(role))
        written.append(target)
    return written


def load_template(paths: Places, role: AgentRole) -> PromptTemplate | None:
    """The repository's template for `role`, compiled and tried; None when it has none.
    `UserFacingError` (one line: file, line, variable) when it does not render."""
    path = prompts_dir(paths) / template_name(role)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UserFacingError(f"{paths.relative(path)}: cannot be read: {error.strerror}") from None
    return compile_template(paths.relative(path), data)


def check_templates(paths: RunnerPaths) -> list[str]:
    """Every role's template compiled and tried (`runner start`, `validate`): the files used."""
    return [template.path for role in AgentRole if (template := load_template(paths, role))]


def compile_template(name: str, data: bytes) -> PromptTemplate:
    """`data` (the file `name`) as a PromptTemplate, or `UserFacingError` naming what fails."""
    from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
    from jinja2.sandbox import SandboxedEnvironment

    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserFacingError(f"{name}: is not UTF-8 text (byte {error.start})") from None
    env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    try:
        ast = env.parse(source, filename=name)
    except TemplateSyntaxError as error:
        raise UserFacingError(f"{name}:{error.lineno}: {error.message}") from None
    used = meta.find_undeclared_variables(ast)
    unknown = sorted(used - KNOWN_VARIABLES)
    if unknown:
        line = min(
            found.lineno
            for found in ast.find_all(nodes.Name)
            if found.name == unknown[0] and found.ctx == "load"
        )
        raise UserFacingError(
            f"{name}:{line}: unknown variable '{unknown[0]}' "
            f"(known: {', '.join(sorted(KNOWN_VARIABLES))})"
        )
    compiled = env.from_string(source)
    compiled.filename = name
    sections = frozenset(used & set(SECTION_ORDER))

    def render(values: Mapping[str, object]) -> str:
        return _render(compiled, name, values)

    empty = render({**SAMPLE_FACTS, **dict.fromkeys(SECTION_ORDER, "")})
    sample = {name: f"## {name}\n\nSome text.\n" for name in SECTION_ORDER}
    render({**SAMPLE_FACTS, **sample})
    return PromptTemplate(
        path=name,
        sha256=hashlib.sha256(data).hexdigest(),
        sections=sections,
        fixed_bytes=len(empty.encode("utf-8")),
        render=render,
    )


def _render(compiled: Template, name: str, values: Mapping[str, object]) -> str:
    from jinja2 import TemplateError

    try:
        return compiled.render(dict(values))
    except TemplateError as error:
        line = _template_line(sys.exc_info()[2], name)
        where = f"{name}:{line}" if line is not None else name
        raise UserFacingError(f"{where}: {error.message or type(error).__name__}") from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as error:
        line = _template_line(sys.exc_info()[2], name)
        where = f"{name}:{line}" if line is not None else name
        raise UserFacingError(f"{where}: {type(error).__name__}: {error}") from None


def _template_line(trace: TracebackType | None, name: str) -> int | None:
    """The template line an error was raised on: Jinja2 rewrites the traceback so that the
    template's frames carry its file name and line."""
    line = None
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == name:
            line = trace.tb_lineno
        trace = trace.tb_next
    return line
