"""`runner loop` as a command (and `runner demo`'s loop): the night loop started at the run's
next iteration, with its live progress line on a terminal.

Draws the progress line the core words (runner_core.views.loop_lines) on stderr and wipes it
before each `loop:` line; never decides what the loop does next.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

import typer

from runner_core.views.progress import progress_line
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.loop.night_loop import LoopRun, run_night_loop
from runner_shell.sandbox.status import sandbox_at_start
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state, load_tree


def _show_progress(paths: RunnerPaths, progress: Callable[[str], None], began: float) -> None:
    try:
        state, config, tree = load_run_state(paths), load_config(paths), load_tree(paths)
    except UserFacingError:
        return  # the step itself reports what is wrong
    line = progress_line(state.next_iter, config.max_iterations, tree, time.monotonic() - began)
    if line is not None:
        progress(line)


def run_loop(
    paths: RunnerPaths,
    repo: Repo,
    prompt_budget: int,
    emit: Callable[[str], None],
    progress: Callable[[str], None] | None = None,
    max_steps: int | None = None,
) -> int:
    """Step until complete (0), stuck (3), the iteration limit (1), a budget (1), or
    `[loop] max_consecutive_runner_errors` runner errors in a row (1); a signal: 128 + it.

    `progress`, when given, hears a one-line summary before each step (a terminal's live line).
    With `max_steps`, the loop also stops (0) once it has taken that many steps.
    """
    started_at = load_run_state(paths).next_iter
    sandbox_at_start(load_config(paths), lambda line: print(line, file=sys.stderr, flush=True))
    began = time.monotonic()

    def show() -> None:
        if progress is not None:
            _show_progress(paths, progress, began)

    run = LoopRun(paths, repo, prompt_budget, emit, started_at)
    return run_night_loop(run, show if progress is not None else None, max_steps)


class LiveProgress:
    """`runner loop`'s progress line on a terminal: drawn on stderr with `\\r`, wiped before
    each `loop:` line and at the end. Disabled, `emit` is plain `typer.echo` and there is no
    progress, so the output is byte-identical to a loop without it."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.drawn = False

    @property
    def progress(self) -> Callable[[str], None] | None:
        return self.show if self.enabled else None

    def show(self, line: str) -> None:
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def emit(self, line: str) -> None:
        self.clear()
        typer.echo(line)

    def __enter__(self) -> LiveProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.clear()
