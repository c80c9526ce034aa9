"""Every command's `--help` ends with an example, and the CLI offers shell completion."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import typer
import typer.main

from runner_shell.cli.app import app


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    # typer's command classes need not be this click's: a group is what has subcommands.
    if hasattr(command, "commands"):
        for name, sub in sorted(command.commands.items()):
            found.extend(_commands(sub, (*path, name)))
    return found


def test_every_command_help_has_an_example() -> None:
    root = typer.main.get_command(app)
    missing = []
    for path, command in _commands(root):
        context = command.make_context(
            " ".join(path) or "runner", ["--help"], resilient_parsing=True
        )
        if "Example:" not in command.get_help(context):
            missing.append(" ".join(path) or "runner")
    assert missing == []
    assert len(_commands(root)) > 30


def test_an_example_is_shown_by_the_real_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runner_shell", "diff", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.rstrip().splitlines()[-1].strip() == "Example: runner diff 4"


def test_shell_completion_is_offered() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runner_shell", "--help"], capture_output=True, text=True
    )
    assert "--install-completion" in result.stdout
    assert "--show-completion" in result.stdout
