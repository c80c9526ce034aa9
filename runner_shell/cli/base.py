"""What every command of the `runner` CLI shares: the typer app and its `node` group, the global
options (`-C`, `--version`), `--json`, and `guarded`, which turns every error a user can cause
into one stderr line and its exit code. The commands live in running.py, ways_out.py,
inspection.py and steering.py; app.py registers them in the order `runner --help` lists them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from runner_core.run.exit_codes import ExitCode
from runner_shell.cli.commands import failure_of
from runner_shell.cli.help_text import RunnerTyper
from runner_shell.errors import UserFacingError, failure_line
from runner_shell.git.repo import GitError, Repo, open_repo
from runner_shell.store.layout import RunnerPaths

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

app = RunnerTyper(
    # `runner --install-completion` / `--show-completion`: typer's completion for the shell.
    add_completion=True,
    no_args_is_help=True,
    help="Drive coding agents through a goal over a strict JSON task tree, one step at a time.",
    pretty_exceptions_enable=False,
    # Plain click help: no `<bool>` placeholders for flags, and `-h` works like `--help`.
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)

F = TypeVar("F", bound=Callable[..., None])

PromptBudget = Annotated[
    int,
    typer.Option(
        "--prompt-budget", min=1000, metavar="BYTES", help="Byte budget of the prompt pack."
    ),
]


def _show_version(value: bool) -> None:
    if value:
        from runner_shell.cli.version import version_line

        typer.echo(version_line())
        raise typer.Exit(0)


def _change_directory(directory: Path | None) -> None:
    if directory is None:
        return
    try:
        os.chdir(directory)
    except OSError as error:
        raise _fail(f"-C {directory}: {error.strerror or error}") from None


@app.callback()
def options(
    directory: Annotated[
        Path | None,
        typer.Option(
            "-C",
            metavar="DIR",
            help="Run as if runner was started in DIR (like git -C).",
        ),
    ] = None,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_show_version,
            help="Print runner's version and exit.",
        ),
    ] = False,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="ID",
            help="The run a command works on (default: the only active one).",
        ),
    ] = None,
) -> None:
    """Drive coding agents through a goal over a strict JSON task tree, one step at a time."""
    _change_directory(directory)
    if run is not None:
        from runner_shell.git.run_checkout import RUN_ENV

        os.environ[RUN_ENV] = run


AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON document (stable keys).")]


def _fail(message: str, code: int = ExitCode.ERROR) -> typer.Exit:
    typer.echo(failure_line(message), err=True)
    return typer.Exit(code)


def guarded(command: F) -> F:
    """Turn every error a user can cause into one stderr line and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except (UserFacingError, GitError, KeyboardInterrupt, OSError) as error:
            failure = failure_of(error)
            if failure is None:
                raise
            raise _fail(*failure) from None

    return wrapper  # type: ignore[return-value]


def _paths() -> tuple[RunnerPaths, Repo]:
    """Where the run is: its own checkout inside .git/runner/ (git/run_checkout.py)."""
    from runner_shell.git.run_checkout import locate_run

    return locate_run(Path.cwd())


def _here() -> tuple[RunnerPaths, Repo]:
    """The checkout the command was started in (init and start write their draft here)."""
    repo = open_repo(Path.cwd())
    return RunnerPaths(repo.root), repo


node_app = RunnerTyper(
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
    help="Change a node of the run by hand (a stuck leaf's ways out), as one commit.",
)
app.add_typer(node_app, name="node")
