"""`runner stop`: ask the running loop to stop after its current iteration.

The request is a file in the common git directory (never in the work tree, so never
committed, and shared by every worktree like the lock). `runner loop` clears a stale one when
it starts and checks for one between iterations; runner_core.loop.pause decides what follows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runner_core.loop.events import EventOrigin
from runner_core.loop.pause import pause_before_step
from runner_core.run.config import Config
from runner_core.run.state import RunState
from runner_core.views.loop_lines import paused_line
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.event_sink import sink_for
from runner_shell.step.lock_and_journal import lock_held
from runner_shell.store.files import atomic_write_text
from runner_shell.store.iteration_log import utc_now
from runner_shell.store.layout import RunnerPaths


def stop_request_path(repo: Repo) -> Path:
    from runner_shell.step.lock_and_journal import run_place

    return run_place(repo, "runner-stop-request")


def request_stop(repo: Repo) -> None:
    """Leave the request for the loop holding the lock; refuses when no loop runs."""
    if not lock_held(repo):
        raise UserFacingError("stop: no runner loop is running on this repository")
    atomic_write_text(stop_request_path(repo), f"requested by {repo.actor()}\n")


def clear_stop_request(repo: Repo) -> None:
    """Forget a request no loop took (its loop ended first): a new loop starts unasked."""
    stop_request_path(repo).unlink(missing_ok=True)


def _take_request(repo: Repo) -> bool:
    path = stop_request_path(repo)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def pause_if_requested(
    paths: RunnerPaths,
    repo: Repo,
    run_state: RunState,
    config: Config,
    steps: int,
    started_at: int,
    emit: Callable[[str], None],
) -> int | None:
    """The loop's exit code when a stop was requested, after recording the pause; else None."""
    if run_state.run_id is None:
        return None
    origin = EventOrigin(run_state.run_id, run_state.next_iter, None, utc_now())
    pause = pause_before_step(_take_request(repo), origin, steps, started_at)
    if pause is None:
        return None
    sink_for(paths, config, run_state.run_id).emit((pause.event,), fsync=True)
    emit(paused_line(run_state.run_id, steps, started_at))
    return pause.exit_code
