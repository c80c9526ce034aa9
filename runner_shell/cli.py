"""The `runner` command (typer): parses arguments, calls the shell, prints seed 002's lines.

Output lines and exit codes are a contract (SPEC §10): 0 ok / open leaf, 1 error (and the
loop's iteration limit), 2 complete, 3 stuck. Any error a user can cause ends in one line on
stderr, never a traceback; set RUNNER_DEBUG=1 to see one for a runner bug.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from runner_core.config import AGENT_BACKENDS
from runner_core.exit_codes import ExitCode
from runner_core.prompt_pack import DEFAULT_PROMPT_BUDGET
from runner_shell import commands
from runner_shell.commands import failure_of
from runner_shell.errors import UserFacingError, failure_line, internal_error_line
from runner_shell.git import GitError, Repo, open_repo
from runner_shell.layout import RunnerPaths
from runner_shell.lock_and_journal import exclusive_lock

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Drive coding agents through a goal over a strict JSON task tree, one step at a time.",
    pretty_exceptions_enable=False,
)

F = TypeVar("F", bound=Callable[..., None])

PromptBudget = Annotated[
    int,
    typer.Option("--prompt-budget", min=1000, help="Byte budget of the prompt pack."),
]


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
    repo = open_repo(Path.cwd())
    return RunnerPaths(repo.root), repo


@app.command()
@guarded
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing state files.")] = False,
    guard: Annotated[
        list[str] | None,
        typer.Option("--guard", help="Guard argv, one --guard per word (default: just ci)."),
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help=f"Agent backend: one of {', '.join(AGENT_BACKENDS)}.")
    ] = "codex",
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", help="Agent argv for backend=command, one --agent per word."),
    ] = None,
) -> None:
    """Scaffold .runner/ with a default config, a placeholder GOAL.md and a root node."""
    from runner_core import ConfigError, parse_config
    from runner_shell.setup import init_runner

    paths, repo = _paths()
    data: dict[str, object] = {"agent": {"backend": backend, "command": list(agent or [])}}
    if guard:
        data["guard"] = {"command": list(guard)}
    try:
        config = parse_config(data)
    except ConfigError as error:
        raise UserFacingError(f"init: {error}") from None
    # `init --force` rewrites the state files under a running loop's feet unless it waits its turn.
    with exclusive_lock(repo):
        init_runner(paths, force, config)
    typer.echo(
        f"initialized {paths.relative(paths.runner_dir)}/ "
        "(edit .runner/GOAL.md, then run 'runner start')"
    )


@app.command()
@guarded
def start() -> None:
    """Create or check out the run branch runner/<run-id> and commit the run's identity."""
    from runner_shell.setup import start_run

    paths, repo = _paths()
    with exclusive_lock(repo):
        started = start_run(paths, repo)
    typer.echo(f"started run={started.run_id} branch={started.branch}")


@app.command()
@guarded
def validate() -> None:
    """Check layout, config, tree and run identity."""
    # The body lives in commands.py, shared with the launcher's fast path (entry.py).
    raise typer.Exit(commands.validate(typer.echo))


@app.command()
@guarded
def select() -> None:
    """Print the next leaf: exit 0 open, 2 complete, 3 stuck."""
    raise typer.Exit(commands.select(typer.echo))


@app.command()
@guarded
def step(prompt_budget: PromptBudget = DEFAULT_PROMPT_BUDGET) -> None:
    """Run one iteration: select, prompt, run the agent, validate, guard, update, log, commit."""
    raise typer.Exit(commands.step(typer.echo, prompt_budget))


@app.command()
@guarded
def loop(prompt_budget: PromptBudget = DEFAULT_PROMPT_BUDGET) -> None:
    """Step until the tree is complete (0), a leaf is stuck (3) or the iteration limit (1)."""
    from runner_shell.iteration_runner import run_loop
    from runner_shell.views import LiveProgress

    paths, repo = _paths()
    # The live line is for a person watching; piped output stays exactly the `loop:` lines.
    live = LiveProgress(enabled=sys.stdout.isatty())
    with exclusive_lock(repo), live:
        code = run_loop(paths, repo, prompt_budget, live.emit, live.progress)
    raise typer.Exit(code)


@app.command()
@guarded
def recover() -> None:
    """Finish an interrupted iteration: keep the agent's changes, restore state, log it."""
    from runner_shell.recover import recover as recover_iteration

    paths, repo = _paths()
    with exclusive_lock(repo):
        result = recover_iteration(paths, repo)
    if result.kind is None or result.journal is None:
        typer.echo("recover: status=clean")
        return
    journal = result.journal
    killed = ",".join(str(pgid) for pgid in result.killed_groups) or "none"
    typer.echo(
        f"recover: status={result.kind.value} run={journal.run_id} iter={journal.iteration} "
        f"node={journal.node_id} killed_process_groups={killed}"
    )


@app.command()
@guarded
def demo(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Where to build the demo repo (default: a new temp dir)."),
    ] = None,
) -> None:
    """Build a throw-away repo and run init/start/loop on it with the built-in demo agent."""
    from runner_shell.demo import run_demo

    raise typer.Exit(run_demo(directory))


# ---------------------------------------------------------------- read-only inspection
# These never take the lock and never write: safe to run beside a loop.

AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON document (stable keys).")]
RunId = Annotated[
    str | None, typer.Option("--run", help="Inspect this run (default: run_state's run).")
]


@app.command()
@guarded
def status(as_json: AsJson = False) -> None:
    """Show the run, the next iteration, the selected and stuck leaves, and the tree."""
    from runner_shell.views import show_status

    show_status(*_paths(), as_json)


@app.command()
@guarded
def history(
    node: Annotated[str | None, typer.Option("--node", help="Only this node's iterations.")] = None,
    run: RunId = None,
    as_json: AsJson = False,
) -> None:
    """List the run's iterations: node, role, status, guard, duration, tokens, error."""
    from runner_shell.views import show_history

    show_history(*_paths(), node, run, as_json)


@app.command()
@guarded
def show(
    iteration: Annotated[int, typer.Argument(min=1, help="The iteration number.")],
    run: RunId = None,
    as_json: AsJson = False,
) -> None:
    """Show one iteration: its meta.json, output and the first lines of its logs."""
    from runner_shell.views import show_iteration

    show_iteration(_paths()[0], iteration, run, as_json)


@app.command()
@guarded
def report(run: RunId = None, as_json: AsJson = False) -> None:
    """Summarise the run: totals, per-node table, slowest iterations, most-retried nodes."""
    from runner_shell.views import show_report

    show_report(*_paths(), run, as_json)


@app.command()
@guarded
def metrics(run: RunId = None) -> None:
    """Print the run's figures in Prometheus text format (for a textfile collector)."""
    from runner_shell.views import show_metrics

    show_metrics(*_paths(), run)


def main() -> None:
    try:
        app()
    except SystemExit:
        raise
    except Exception as error:  # a runner bug: one line unless debugging
        if os.environ.get("RUNNER_DEBUG"):
            raise
        print(internal_error_line(error), file=sys.stderr)
        sys.exit(1)
