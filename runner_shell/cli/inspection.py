"""The read-only commands: `runner status`, `follow`, `history`, `show`, `report`, `runs`,
`metrics`, `serve`, `audit`, `diff` and `logs restore`.

Registered on base.py's typer app when app.py imports this module. These never take the lock
and, but for `logs restore` under `.runner/iterations/`, never write: safe to run beside a
loop. Each gathers through runner_shell.views and prints what the core rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from runner_shell.cli.base import HELP_OPTIONS, AsJson, _here, _paths, app, guarded
from runner_shell.cli.help_text import RunnerTyper
from runner_shell.errors import UserFacingError

RunId = Annotated[
    str | None,
    typer.Option("--run", metavar="RUN_ID", help="Inspect this run (default: run_state's run)."),
]


@app.command()
@guarded
def status(
    as_json: AsJson = False,
    run: RunId = None,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree",
            help="List every node of the tree (default: counts and the nodes that matter).",
        ),
    ] = False,
) -> None:
    """Show the run, the next iteration, the selected and stuck leaves, and the tree's summary."""
    from runner_shell.views.inspect import show_status

    paths, repo = _paths()
    show_status(paths, repo, as_json, run, tree)
    if not as_json and run is None:
        from runner_shell.cli.commands import finished_line

        finished_line(paths, repo, typer.echo)


@app.command()
@guarded
def follow(
    run: RunId = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print JSON Lines (each event as one JSON object per line)."),
    ] = False,
    last: Annotated[
        int | None,
        typer.Option("-n", min=0, metavar="N", help="Replay the last N events, not the loop's."),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option("--since", min=1, metavar="ITER", help="Replay from iteration ITER on."),
    ] = None,
) -> None:
    """Print the run's events as they happen (from another terminal): the current loop's so
    far, then each new one; exit when that loop ends, or wait for one to start."""
    from runner_core.views.follow import CurrentLoop, LastEvents, Replay, SinceIteration
    from runner_shell.views.follow import follow_run
    from runner_shell.views.reading import warn

    if last is not None and since is not None:
        raise UserFacingError("follow: -n and --since cannot be combined (pick one)")
    replay: Replay = CurrentLoop()
    if last is not None:
        replay = LastEvents(last)
    elif since is not None:
        replay = SinceIteration(since)
    paths, repo = _paths()
    follow_run(paths, repo, run, as_json, lambda line: typer.echo(line), warn, replay)


@app.command()
@guarded
def history(
    node: Annotated[
        str | None, typer.Option("--node", metavar="ID", help="Only this node's iterations.")
    ] = None,
    run: RunId = None,
    as_json: AsJson = False,
) -> None:
    """List the run's iterations: node, role, status, guard, duration, tokens, error."""
    from runner_shell.views.inspect import show_history

    show_history(*_paths(), node, run, as_json)


Iteration = Annotated[int, typer.Argument(min=1, metavar="ITER", help="The iteration number.")]


@app.command()
@guarded
def show(
    iteration: Iteration,
    run: RunId = None,
    as_json: AsJson = False,
    tests: Annotated[
        bool, typer.Option("--tests", help="List every test whose outcome changed.")
    ] = False,
    prompt: Annotated[
        bool, typer.Option("--prompt", help="Print the prompt the agent was sent, as it was.")
    ] = False,
) -> None:
    """Show one iteration: its meta.json, output and the first lines of its logs."""
    from runner_shell.views.inspect import show_iteration, show_prompt

    if prompt:
        show_prompt(*_paths(), iteration, run)
        return
    show_iteration(*_paths(), iteration, run, as_json, tests)


@app.command()
@guarded
def report(run: RunId = None, as_json: AsJson = False) -> None:
    """Summarise the run: totals, per-node table, slowest iterations, most-retried nodes."""
    from runner_shell.views.inspect import show_report

    show_report(*_paths(), run, as_json)


@app.command()
@guarded
def runs(as_json: AsJson = False) -> None:
    """List every run: id, branch, state, next iteration, leaves passed/total, last activity."""
    from runner_core.json_form import json_form
    from runner_core.run.listing import RunsDocument, run_line
    from runner_shell.step.run_branches import gather_runs

    rows = gather_runs(*_here())  # every run, from wherever it was asked
    if as_json:
        typer.echo(json.dumps(json_form(RunsDocument(rows)), indent=2, ensure_ascii=False))
    elif not rows:
        typer.echo("runs: none (run 'runner start')")
    else:
        typer.echo("\n".join(run_line(row) for row in rows))


@app.command()
@guarded
def metrics(run: RunId = None) -> None:
    """Print the run's figures in Prometheus text format (for a textfile collector)."""
    from runner_shell.views.inspect import show_metrics

    show_metrics(*_paths(), run)


@app.command()
@guarded
def serve(
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", min=0, max=65535, metavar="PORT", help="Port to bind (0: any free one)."
        ),
    ] = 8765,
    run: RunId = None,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            metavar="FILE",
            help="Write the page of the run as it stands to FILE (self-contained) and exit.",
        ),
    ] = None,
) -> None:
    """Serve a read-only web view of the run, live while a loop runs (never takes the lock)."""
    from runner_shell.store.state_files import load_run_state
    from runner_shell.views.reading import choose_run
    from runner_shell.web.serve import serve as serve_run
    from runner_shell.web.snapshot import write_snapshot

    paths, _ = _paths()
    if run is not None:
        choose_run(paths, load_run_state(paths), run)
    if snapshot is not None:
        write_snapshot(paths.root, run, snapshot)
        typer.echo(f"serve: wrote {snapshot} (a snapshot of the run's page)")
        return
    serve_run(paths.root, host, port, run)


@app.command()
@guarded
def audit(run: RunId = None, as_json: AsJson = False) -> None:
    """Replay the run from git alone and list every change its history does not prove."""
    from runner_shell.views.history import show_audit

    raise typer.Exit(show_audit(*_paths(), run, as_json))


@app.command()
@guarded
def diff(iteration: Iteration, run: RunId = None, as_json: AsJson = False) -> None:
    """Show what one iteration did to the task tree, node by node."""
    from runner_shell.views.history import show_diff

    show_diff(*_paths(), iteration, run, as_json)


logs_app = RunnerTyper(
    no_args_is_help=True,
    help="The iteration logs archived in git on refs/runner/logs/<run>.",
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)
app.add_typer(logs_app, name="logs")


@logs_app.command("restore")
@guarded
def logs_restore(run: RunId = None) -> None:
    """Re-create .runner/iterations/<run>/ from refs/runner/logs/<run>."""
    from runner_shell.views.history import restore_logs

    restore_logs(*_paths(), run)
