"""An `Example:` for every command's `--help`, kept beside the commands they show.

A command whose docstring carries its own example (the newer ones) is left alone; the rest
get the example below as their help's epilog, so help texts stay where they are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import typer
from typer.models import DefaultPlaceholder

EXAMPLES: Mapping[str, str] = MappingProxyType(
    {
        "init": 'runner init --backend command --guard "python -m pytest -q"',
        "start": "runner start",
        "validate": "runner validate --json",
        "select": "runner select",
        "step": "runner step",
        "loop": "runner loop --max-steps 5",
        "recover": "runner recover",
        "demo": "runner demo --dir /tmp/runner-demo",
        "tell": 'runner tell "Use the logging module, never print."',
        "status": "runner status --json",
        "follow": "runner follow",
        "history": "runner history --node root.2",
        "show": "runner show 3",
        "report": "runner report --json",
        "runs": "runner runs",
        "metrics": "runner metrics > /var/lib/node_exporter/runner.prom",
        "serve": "runner serve --port 8765",
        "notify": "runner notify --test",
        "tui": "runner tui",
        "audit": "runner audit",
        "diff": "runner diff 4",
        "node retry": "runner node retry root.2 --attempts 2",
        "node decompose": "runner node decompose root.2 --from children.json",
        "node replace": "runner node replace root.2 --from plan.json",
        "node skip": "runner node skip root.3",
        "logs restore": "runner logs restore --run run-1a2b3c4d",
        "worker": "runner worker --address tq.lan:7233 --task-queue runner "
        "--repo-url git@example.org:team/app.git",
        "workers": "runner workers --address tq.lan:7233 --task-queue runner",
        # The groups' own help, and the top level's.
        "node": "runner node retry root.2 --attempts 2",
        "logs": "runner logs restore",
        "config": "runner config set budget.max_cost_usd 20",
        "": "runner init && runner start && runner loop",
    }
)


def _epilog(name: str) -> str:
    # `\b` keeps click from rewrapping the command onto the paragraph's line.
    return f"\b\nExample: {EXAMPLES[name]}"


def _unset(epilog: object) -> bool:
    """typer marks an epilog nobody gave with a placeholder, not None."""
    return epilog is None or isinstance(epilog, DefaultPlaceholder)


def _command_name(info: typer.models.CommandInfo) -> str:
    if info.name:
        return info.name
    assert info.callback is not None
    return info.callback.__name__.replace("_", "-")


def _add(typer_app: typer.Typer, prefix: str) -> None:
    for info in typer_app.registered_commands:
        name = f"{prefix}{_command_name(info)}"
        docstring = info.callback.__doc__ if info.callback is not None else None
        if name in EXAMPLES and info.epilog is None and "Example:" not in (docstring or ""):
            info.epilog = _epilog(name)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None and group.name is not None:
            name = f"{prefix}{group.name}"
            if name in EXAMPLES and _unset(group.typer_instance.info.epilog):
                group.typer_instance.info.epilog = _epilog(name)
            _add(group.typer_instance, f"{name} ")


def add_examples(app: typer.Typer) -> None:
    """Give each registered command without an example in its docstring its `EXAMPLES` line."""
    # With a callback, the top level's help is the callback's own.
    top = app.registered_callback or app.info
    if _unset(top.epilog):
        top.epilog = _epilog("")
    _add(app, "")
