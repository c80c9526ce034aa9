"""The `runner` command (typer): parses arguments, calls the shell, prints the contract lines.

Output lines and exit codes are a contract: 0 ok / open leaf, 1 error (and the
loop's iteration limit), 2 complete, 3 stuck. Any error a user can cause ends in one line on
stderr, never a traceback; set RUNNER_DEBUG=1 to see one for a runner bug.
"""

from __future__ import annotations

import os
import sys

import typer

# Each module registers its commands on base's `app` when imported, and `runner --help` lists
# them in the order they were registered: keep this order.
# isort: off
from runner_shell.cli.base import app
from runner_shell.cli import running as running
from runner_shell.cli import ways_out as ways_out
from runner_shell.cli import inspection as inspection
from runner_shell.cli import steering as steering
from runner_shell.cli import workers as workers
from runner_shell.cli import evaluation as evaluation
from runner_shell.cli import watching as watching

# isort: on
from runner_shell.cli.examples import add_examples
from runner_shell.cli.extra import missing_extra
from runner_shell.errors import failure_line, internal_error_line

# `app` is base's, with every command on it.
__all__ = ["app", "main"]


def usage_error_text(error: typer.TyperException) -> str:
    """One line naming the problem and where help is; bare `runner` gets its help instead."""
    message = error.format_message()
    if type(error).__name__ == "NoArgsIsHelpError":
        return message
    context = getattr(error, "ctx", None)
    where = f" (see '{context.command_path} --help')" if context is not None else ""
    return f"{failure_line(message)}{where}"


# Every command gets its help's example once all are registered.
add_examples(app)


def main() -> None:
    # Only a process whose command brought Temporal in leaves without teardown (`_exit`).
    quick = "temporalio" not in sys.modules
    try:
        code: object = _run()
    except SystemExit as ended:
        code = ended.code
    sent = flush_notifications()
    _exit(code, (quick and "temporalio" in sys.modules) or not sent)


def flush_notifications() -> bool:
    """A command that queued `[notify]` messages gives them their timeout to go, once; False
    when one is still being sent (to a receiver that hangs): the process then ends without
    waiting for it, as after Temporal."""
    sender = sys.modules.get("runner_shell.notify.sender")
    return True if sender is None else bool(sender.flush_pending())


def _run() -> int:
    try:
        code = app(standalone_mode=False, prog_name="runner")
    except typer.TyperException as error:
        # A usage error exits 1, never click's 2: to scripts 2 means "complete".
        print(usage_error_text(error), file=sys.stderr)
        return 1
    except typer.Abort:
        print("runner: interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as error:  # a runner bug: one line unless debugging
        if os.environ.get("RUNNER_DEBUG") or missing_extra(error) is not None:
            raise  # an extra not installed: the entry point says which
        print(internal_error_line(error), file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0


def _exit(code: object, quick: bool) -> None:
    """Exit with `code`; `quick`, after a command that talked to Temporal, without the
    interpreter's teardown: the SDK's native threads can crash it there (docs/temporal.md),
    after all was written; and while a `[notify]` send outlives its timeout."""
    if not quick:
        sys.exit(code)  # type: ignore[arg-type]
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
