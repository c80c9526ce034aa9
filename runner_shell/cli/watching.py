"""`runner notify --test` and `runner tui`: watching a night's run from where the operator is.

Each command imports what it needs (Apprise, Textual) inside its body, so `runner --help` and
every other command never load them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from runner_shell.cli.base import _paths, app, guarded
from runner_shell.errors import UserFacingError


@app.command()
@guarded
def notify(
    test: Annotated[
        bool, typer.Option("--test", help="Send one test message to every [notify] URL.")
    ] = False,
) -> None:
    """Send a test message through `[notify] urls` (docs/notify.md) and say how it went."""
    from runner_core.views.notify import trial_notice
    from runner_shell.notify.sender import deliver, masked
    from runner_shell.store.state_files import load_config, load_run_state

    if not test:
        raise UserFacingError(
            "notify: pass --test to send a test message (see 'runner notify --help')"
        )
    paths, _ = _paths()
    config = load_config(paths).notify
    if not config.urls:
        raise UserFacingError(
            'notify: no [notify] urls in .runner/config.toml (add urls = ["json://host:port"], '
            "see docs/notify.md)"
        )
    run_id = load_run_state(paths).run_id
    failed = deliver(config.urls, trial_notice(run_id), config.timeout_secs)
    if failed:
        raise UserFacingError(
            f"notify: could not send to {failed[0]}"
            + (f" and {len(failed) - 1} more" if len(failed) > 1 else "")
            + f" within {config.timeout_secs}s (check the URL and the receiver)"
        )
    shown = ", ".join(masked(url) for url in config.urls)
    typer.echo(f"notify: sent a test message to {len(config.urls)} URL(s): {shown}")


@app.command()
@guarded
def tui() -> None:
    """Watch the run in a terminal UI, live (never takes the lock); keys stop, tell, answer,
    retry or skip a node through the same commands. Not on a terminal it prints `runner
    status`."""
    import sys

    paths, _ = _paths()
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from runner_shell.cli import commands

        code = commands.status(typer.echo)
        raise typer.Exit(code)
    from runner_shell.tui.app import RunnerTui

    RunnerTui(paths.root).run()
