"""How `runner --help` and each command's usage line read: whole summaries, plain names.

click cuts a command's summary in the command list to fit one line ("Scaffold .runner/ with a
default config, a placeholder..."), and typer writes a required argument as `{ITER}`; the
list here shows each command's whole first paragraph (wrapped), the usage line `ITER` for a
required argument and `[TEXT]` for an optional one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

# typer runs on its own copy of click: these are the classes its commands and groups are made of.
from typer._click import Command, Context, HelpFormatter
from typer.core import TyperCommand, TyperGroup


def summary(command: Command) -> str:
    """A command's first paragraph, on one line."""
    text = command.short_help or command.help or ""
    return " ".join(text.split("\n\n", 1)[0].split())


class RunnerGroup(TyperGroup):
    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class RunnerCommand(TyperCommand):
    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class RunnerTyper(typer.Typer):
    """A typer app whose groups and commands print help as this module says."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=RunnerGroup, **settings)

    def command(self, *args: Any, **settings: Any) -> Callable[[Any], Any]:
        settings.setdefault("cls", RunnerCommand)
        return super().command(*args, **settings)
