"""Hooks: run a user's argv with an event's JSON on stdin, never failing the run.

A hook runs without a shell, in the repo root, in its own process group, with a timeout after
which the whole group is killed; it is done when its own process exits, and what it left in its
group is killed then, not waited for. Whatever happens — a failure, a hang, a missing program — the
caller gets a `HookResult` to log; nothing here raises. Which hook an event fires is decided
in `runner_core.loop.policy`.
"""

from __future__ import annotations

import contextlib
import enum
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import attrs

from runner_core.loop.events import Event, event_line
from runner_core.loop.policy import HOOK_FOR_EVENT
from runner_core.run.config import HooksConfig

# How much of a failing hook's stderr its result keeps (the end, where the error usually is).
STDERR_TAIL_CHARS = 300
# After killing a timed-out hook's group, how long to wait for the hook to be reaped.
_REAP_SECS = 2.0
_STDERR_KEPT_BYTES = 4 * STDERR_TAIL_CHARS
_PIPE_CHUNK = 65536


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
    """Run `argv` once with `stdin_text` on stdin; never raises.

    The hook is done when its own process exits: whatever it left in its process group is
    killed then, never waited for, and a process that left the group (`setsid`) and still
    holds its stderr is not listened to any more. The timeout counts from its start, for
    every hook alike, whatever it does with its stdin and stderr."""
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
    exited, stderr = _await_exit(proc, stdin_text.encode("utf-8"), started + timeout_secs)
    _kill_group(proc)
    if not exited:
        return result(HookOutcome.TIMED_OUT, None, f"still running after {timeout_secs:g}s, killed")
    if proc.returncode == 0:
        return result(HookOutcome.OK, 0, "")
    return result(HookOutcome.FAILED, proc.returncode, _failure_detail(proc.returncode, stderr))


def _await_exit(proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> tuple[bool, bytes]:
    """Feed `data` to the hook's stdin and keep the end of its stderr until the hook process
    itself exits (True) or `deadline` passes (False); never waits on a pipe a leftover holds."""
    assert proc.stdin is not None and proc.stderr is not None
    stdin, stderr = proc.stdin, proc.stderr
    kept = bytearray()
    pidfd = os.pidfd_open(proc.pid)
    with selectors.DefaultSelector() as selector:
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        os.set_blocking(stderr.fileno(), False)
        selector.register(stderr, selectors.EVENT_READ, "stderr")
        if data:
            os.set_blocking(stdin.fileno(), False)
            selector.register(stdin, selectors.EVENT_WRITE, "stdin")
        else:
            stdin.close()
        sent = 0
        exited = False
        try:
            while not exited:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for key, _ in selector.select(left):
                    if key.data == "exit":
                        exited = True
                    elif key.data == "stderr":
                        chunk = _read_some(stderr)
                        if not chunk:
                            selector.unregister(stderr)
                        kept = (kept + chunk)[-_STDERR_KEPT_BYTES:]
                    else:
                        sent = _write_some(stdin, data, sent)
                        if sent >= len(data):
                            selector.unregister(stdin)
                            _close_quietly(stdin)
            # What the hook wrote before it exited is in the pipe already: read it, not more.
            kept = (kept + _read_some(stderr))[-_STDERR_KEPT_BYTES:]
        finally:
            os.close(pidfd)
            _close_quietly(stdin)
            _close_quietly(stderr)
    if exited:
        proc.wait()
    return exited, bytes(kept)


def _write_some(stream: IO[bytes], data: bytes, sent: int) -> int:
    """How much of `data` is sent after one write past `sent`; all of it once the hook closed
    its stdin (it did not want the rest)."""
    try:
        return sent + os.write(stream.fileno(), data[sent : sent + _PIPE_CHUNK])
    except BlockingIOError:
        return sent
    except OSError:
        return len(data)


def _read_some(stream: IO[bytes]) -> bytes:
    try:
        return os.read(stream.fileno(), 65536)
    except (BlockingIOError, OSError):
        return b""


def _close_quietly(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        stream.close()


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
    """End what is left in the hook's process group (the hook itself when it timed out) and
    reap the hook; the group's id is the hook's pid (start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_REAP_SECS)


def fire_hook(
    hooks: HooksConfig, event: Event, cwd: Path, timeout_secs: float
) -> HookResult | None:
    """Run the hook `event` fires, if its type has one and it is configured; None otherwise."""
    hook = HOOK_FOR_EVENT.get(event.type)
    if hook is None or not hooks.argv(hook):
        return None
    return run_hook(hook, hooks.argv(hook), event_line(event), cwd, timeout_secs)
