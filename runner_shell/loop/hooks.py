"""Hooks: run a user's argv with an event's JSON on stdin, never failing the run.

A hook runs without a shell, in the repo root, in its own process group, with a timeout after
which the whole group is killed. Whatever happens — a failure, a hang, a missing program — the
caller gets a `HookResult` to log; nothing here raises. Which hook an event fires is decided
in `runner_core.loop.policy`.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from runner_core.loop.events import Event, event_line
from runner_core.loop.policy import HOOK_FOR_EVENT
from runner_core.run.config import HooksConfig

# How much of a failing hook's stderr its result keeps (the end, where the error usually is).
STDERR_TAIL_CHARS = 300
# After killing a timed-out hook's group, how long to wait for its pipes to close.
_REAP_SECS = 2.0


class HookOutcome(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"  # exited non-zero or was killed by a signal
    TIMED_OUT = "timed_out"  # still running at the timeout: its process group was killed
    NOT_STARTED = "not_started"  # the program could not be started


@attrs.frozen(slots=True)
class HookResult:
    hook: str
    argv: tuple[str, ...]
    outcome: HookOutcome
    exit_code: int | None
    detail: str
    duration_secs: float

    @property
    def ok(self) -> bool:
        return self.outcome is HookOutcome.OK

    def stderr_line(self) -> str:
        """The one line a failed hook prints on stderr."""
        return f"runner: hook {self.hook} {self.outcome.value}: {self.detail} (the run goes on)"


def run_hook(
    hook: str, argv: Sequence[str], stdin_text: str, cwd: Path, timeout_secs: float
) -> HookResult:
    """Run `argv` once with `stdin_text` on stdin; never raises."""
    started = time.monotonic()

    def result(outcome: HookOutcome, code: int | None, detail: str) -> HookResult:
        return HookResult(hook, tuple(argv), outcome, code, detail, time.monotonic() - started)

    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError) as error:
        return result(HookOutcome.NOT_STARTED, None, _start_failure(argv, error))
    try:
        _, stderr = proc.communicate(stdin_text.encode("utf-8"), timeout=timeout_secs)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return result(HookOutcome.TIMED_OUT, None, f"still running after {timeout_secs:g}s, killed")
    if proc.returncode == 0:
        return result(HookOutcome.OK, 0, "")
    return result(HookOutcome.FAILED, proc.returncode, _failure_detail(proc.returncode, stderr))


def _start_failure(argv: Sequence[str], error: OSError | ValueError) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"cannot run {argv[0] if argv else ''!r}: {error.strerror}"
    return f"cannot run {list(argv)!r}: {error}"


def _failure_detail(code: int, stderr: bytes) -> str:
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    tail = stderr.decode("utf-8", errors="replace").strip()[-STDERR_TAIL_CHARS:]
    last = tail.splitlines()[-1] if tail else ""
    return f"{how}: {last}" if last else how


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The group's leader is the hook itself (start_new_session); it may be gone already.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=_REAP_SECS)
    except subprocess.TimeoutExpired:
        # A grandchild that left the group still holds the pipe: stop listening to it.
        proc.kill()
        proc.wait()


def fire_hook(
    hooks: HooksConfig, event: Event, cwd: Path, timeout_secs: float
) -> HookResult | None:
    """Run the hook `event` fires, if its type has one and it is configured; None otherwise."""
    hook = HOOK_FOR_EVENT.get(event.type)
    if hook is None or not hooks.argv(hook):
        return None
    return run_hook(hook, hooks.argv(hook), event_line(event), cwd, timeout_secs)
