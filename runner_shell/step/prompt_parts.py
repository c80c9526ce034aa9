"""The parts of an iteration's prompt, as the shell reads them for the core to assemble.

Fills in the built-in contract and output templates (`templates/`), reads the operator's
guidance, assumptions and questions within the prompt budget, and loads the repository's own
template. Never decides the prompt's order or wording: runner_core.prompt.pack does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from string import Template

from runner_core.iteration.facts import PromptParts
from runner_core.run.config import Config
from runner_core.tree.model import AgentRole
from runner_shell.sandbox.seen_at import ITERATION
from runner_shell.step.agent_and_guard import AGENT_DIR, schema_path
from runner_shell.step.prompt_templates import load_template
from runner_shell.store.layout import Places
from runner_shell.store.state_files import read_optional_text


def _template(name: str, values: Mapping[str, str]) -> str:
    text = (Path(__file__).parent / "templates" / name).read_text(encoding="utf-8")
    return Template(text).safe_substitute(values)


def prompt_parts(
    paths: Places,
    config: Config,
    role: AgentRole,
    iter_dir: Path,
    budget: int,
    confined: bool = False,
) -> PromptParts:
    """The prompt's parts for an iteration of `role` writing into `iter_dir`: the built-in
    contract and output templates filled in (the output file where the agent sees it: in the
    sandbox's /iteration when `confined`), the operator's files within `budget`, and the
    repository's own template when it has one."""
    agent_dir = ITERATION if confined else iter_dir / AGENT_DIR
    values = {
        "context_dir": paths.relative(paths.context_dir) + "/",
        "guard_command": " ".join(config.guard_command),
        "output_path": str(agent_dir / "agent_output.json"),
        "schema_path": str(schema_path(paths, role)),
    }
    return PromptParts(
        contract=_template(f"contract_{role.value}.md", values),
        output=_template(f"output_{role.value}.md", values),
        guidance=read_optional_text(paths.guidance, budget),
        assumptions=read_optional_text(paths.assumptions, budget),
        questions=read_optional_text(paths.questions, budget),
        budget=budget,
        template=load_template(paths, role),
    )
