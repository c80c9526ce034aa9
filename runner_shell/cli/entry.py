"""The `runner` executable: `runner select`, `validate`, `step`, `status`, `history`, `report`
and `--version` without typer.

Importing typer (with click, rich and pydantic) and dispatching through it costs about 100 ms,
as much as `runner select` then spends reading, validating and selecting from a 10,000-node
tree, and more than a step with a quick agent spends besides its git commands. Exactly
`runner select`, `validate`, `step`, `status`, `history` or `report`, with no option, runs the
shared body in commands.py here and prints the same bytes with the same exit code as the typer
command (the views write through runner_shell.views.echo either way); any other command line,
`--help`, `--json` and `--prompt-budget` included, goes to the typer CLI in cli.py.
`runner --version` (or `-V`) alone prints `version_line()` (cli/version.py) here, as typer's
option does.

The read-only commands of the fast path run with the cyclic garbage collector off: a process
that reads, prints and exits frees no cycle worth finding, while its imports and the
containers of a 10,000-node tree set off collections that walk everything allocated so far,
a tenth of `runner status`'s time. `runner step` keeps it: it may run for hours. Once the
command is done its objects are frozen (`gc.freeze`), so that the collections the interpreter
runs at exit, collector off or not, do not walk every module and class again: a tenth of
`runner status`'s time too.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from typing import TextIO

from runner_shell.cli.extra import MISSING_EXTRA, missing_extra
from runner_shell.views.echo import write_line

FAST_COMMANDS = ("select", "validate", "step", "status", "history", "report")
READ_ONLY_COMMANDS = frozenset(FAST_COMMANDS) - {"step"}
VERSION_FLAGS = ("--version", "-V")


def main() -> None:
    try:
        _main()
    except ModuleNotFoundError as error:
        missing = missing_extra(error)
        if missing is None:
            raise
        _write_line(sys.stderr, MISSING_EXTRA.format(name=missing))
        sys.exit(1)


def _main() -> None:
    arguments = sys.argv[1:]
    if len(arguments) == 1 and arguments[0] in FAST_COMMANDS:
        if arguments[0] in READ_ONLY_COMMANDS:
            gc.disable()
        code = _run_fast(arguments[0])
        if arguments[0] in READ_ONLY_COMMANDS:
            gc.freeze()
        sender = sys.modules.get("runner_shell.notify.sender")
        # `runner step` queued [notify] messages: one timeout to go, then no wait for a hung one.
        if sender is not None and not sender.flush_pending():
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        sys.exit(code)
    if len(arguments) == 1 and arguments[0] in VERSION_FLAGS:
        from runner_shell.cli.version import version_line

        _write_line(sys.stdout, version_line())
        sys.exit(0)
    from runner_shell.cli.app import main as typer_main

    typer_main()


def _write_line(stream: TextIO, line: str) -> None:
    """What `typer.echo` does with a line of ours (runner_shell.views.echo)."""
    write_line(stream, line)


def _run_fast(name: str) -> int:
    # Imported here so the common start-up stays the bare minimum the command needs.
    from runner_shell.cli import commands
    from runner_shell.errors import failure_line, internal_error_line

    command: Callable[[commands.Echo], int]
    if name == "step":
        from runner_core.prompt.pack import DEFAULT_PROMPT_BUDGET

        command = functools.partial(commands.step, prompt_budget=DEFAULT_PROMPT_BUDGET)
    else:
        command = getattr(commands, name)
    try:
        try:
            return command(lambda line: _write_line(sys.stdout, line))
        except (Exception, KeyboardInterrupt) as error:
            failure = commands.failure_of(error)
            if failure is None:
                raise
            message, code = failure
            _write_line(sys.stderr, failure_line(message))
            return code
    except Exception as error:  # a runner bug: one line unless debugging
        if missing_extra(error) is not None:
            raise  # not a bug: main says which extra
        if os.environ.get("RUNNER_DEBUG"):
            raise
        print(internal_error_line(error), file=sys.stderr)
        return 1
