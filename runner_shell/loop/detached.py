"""`runner loop --detach`: the loop as a process of its own session, beside the terminal.

The child is `runner --run <id> loop` started with a new session (no controlling terminal,
so closing the terminal sends it no SIGHUP), stdin from /dev/null and its output appended to
`.git/runner/runs/<run-id>/loop.log`. It takes the lock itself, like any loop; this only
checks that none holds it yet, so a second `--detach` refuses at once.
"""

from __future__ import annotations

import os
import subprocess
import sys

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.git.run_checkout import RUN_ENV, run_home
from runner_shell.step.lock_and_journal import lock_held
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state


def detach_loop(
    paths: RunnerPaths, repo: Repo, prompt_budget: int, max_steps: int | None
) -> tuple[str, ...]:
    """Start the loop in the background; the lines telling how to follow, stop and see it."""
    run_id = load_run_state(paths).run_id
    if run_id is None:
        raise UserFacingError("loop --detach: no run is started (run 'runner start')")
    if lock_held(repo):
        raise UserFacingError("loop --detach: a runner already holds the lock on this repository")
    home = run_home(repo, run_id)
    home.mkdir(parents=True, exist_ok=True)
    log = home / "loop.log"
    argv = [sys.executable, "-m", "runner_shell", "--run", run_id, "loop", "--quiet"]
    argv += ["--prompt-budget", str(prompt_budget)]
    if max_steps is not None:
        argv += ["--max-steps", str(max_steps)]
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    descriptor = os.open(log, flags, 0o644)
    try:
        child = subprocess.Popen(
            argv,
            cwd=paths.root,
            stdin=subprocess.DEVNULL,
            stdout=descriptor,
            stderr=descriptor,
            start_new_session=True,
            env={**os.environ, RUN_ENV: run_id},
        )
    finally:
        os.close(descriptor)
    return (
        f"loop: detached run={run_id} pid={child.pid} log={log}",
        f"loop: follow with 'runner --run {run_id} follow' or 'tail -f {log}'; "
        f"stop with 'runner --run {run_id} stop'; see it with 'runner --run {run_id} status'",
    )
