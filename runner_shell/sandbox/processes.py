"""Start one child process (an agent or a guard), wait for it with a deadline, and log its output.

This is the only place the runner spawns processes. The child runs without a shell, in its own
process group; stdout and stderr are drained together and only the first `limit_bytes` of each are
kept; a timeout or a lingering grandchild ends in the whole group being killed. Given a
`Confinement`, the child is bubblewrap running the argv in the sandbox: killing its group then
ends the sandbox's PID namespace and every process in it, however it left the group. It never
reads meaning into what the child printed and never decides whether a step passed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import attrs

from runner_core.run.sandbox_config import LimitHit
from runner_shell.sandbox.bwrap import Confinement, launch
from runner_shell.sandbox.reaping import reap, wait_ended
from runner_shell.sandbox.watch import LimitWatch
from runner_shell.signals import raise_if_interrupted
from runner_shell.store.files import PendingFile, atomic_write_bytes, open_truncate

_READ_CHUNK_BYTES = 1024 * 1024
# A loud child fills a pipe of the default 64 KiB in no time: a larger one lets it write on
# while the runner reads a megabyte at a time (Linux; up to /proc/sys/fs/pipe-max-size).
_PIPE_BYTES = 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
# The longest we sleep without re-checking whether the direct child has exited.
_EXIT_POLL_SECS = 0.05
# A wake-up later than planned by more than this: the runner itself was stopped or starved.
_SUSPENDED_SECS = 2.0
# A child that has exited may leave a grandchild holding our pipes; we wait this long at most.
_POST_EXIT_WINDOW_CAP_SECS = 1.0
# Bounds the last read of what is already buffered, in case a descendant is still writing.
_FINAL_DRAIN_MAX_READS = 16
_GROUP_POLL_SECS = 0.02
_CONFIG_HINT = "check the command in .runner/state/config.toml"


@attrs.frozen(slots=True)
class ProcessResult:
    """How a finished child ended. `exit_code` is negative (-signal) if a signal killed it."""

    argv: tuple[str, ...]
    exit_code: int | None  # None when the process was killed because of the timeout
    timed_out: bool
    duration_ms: int
    stdout_bytes: int  # everything the child wrote, not only what was kept
    stderr_bytes: int
    limit: LimitHit | None = None  # the sandbox's limit the child reached (it was killed at once)


class SpawnError(Exception):
    """The process could not be started at all."""

    def __init__(self, argv: Sequence[str], reason: str) -> None:
        super().__init__(tuple(argv), reason)
        self.argv: tuple[str, ...] = tuple(argv)
        self.reason = reason

    def __str__(self) -> str:
        program = self.argv[0] if self.argv else ""
        return f"cannot start '{program}': {self.reason}"


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin_path: Path | None,
    timeout_secs: float,
    log_path: Path,
    limit_bytes: int,
    stdout_copy_path: Path | None = None,
    stdout_copy_limit_bytes: int = 64 * 1024 * 1024,
    grace_secs: float = 2.0,
    on_start: Callable[[int], None] | None = None,
    on_output: Callable[[bytes], None] | None = None,
    confinement: Confinement | None = None,
) -> ProcessResult:
    """Run `argv` to completion or timeout; `log_path` grows with what is kept of both streams
    as it comes (`on_output` hears each piece), then is replaced by the sectioned log.

    Raises SpawnError if the process cannot be started; an unreadable `stdin_path` is the
    caller's bug and propagates as OSError. `on_start(pid)` is called as soon as the child
    exists; its pid is also its process group id. With a `confinement` the child runs in the
    sandbox (with exactly `env`, in its work directory); the pid is then bubblewrap's.
    """
    argv_t = _checked_argv(argv, limit_bytes, stdout_copy_limit_bytes)
    stdout_copy = PendingFile(stdout_copy_path) if stdout_copy_path is not None else None
    try:
        proc, watch = _spawn(
            argv_t, cwd=cwd, env=env, stdin_path=stdin_path, confinement=confinement
        )
        started = time.monotonic()
        captures = _captures(limit_bytes, stdout_copy, stdout_copy_limit_bytes)
        timed_out, limit, stdout, stderr = _drain_logged(
            proc, log_path, on_output, on_start, captures, started + timeout_secs, grace_secs, watch
        )
        duration_ms = int((time.monotonic() - started) * 1000)
        if stdout_copy is not None:
            stdout_copy.commit()
    except BaseException:
        if stdout_copy is not None:
            stdout_copy.discard()
        raise

    _write_log(log_path, stdout, stderr, timeout_secs if timed_out else None)
    return ProcessResult(
        argv=argv_t,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        duration_ms=duration_ms,
        stdout_bytes=stdout.total,
        stderr_bytes=stderr.total,
        limit=limit,
    )


def _checked_argv(argv: Sequence[str], limit_bytes: int, copy_limit_bytes: int) -> tuple[str, ...]:
    """`argv` as run; SpawnError when it is empty, ValueError when a byte limit is negative."""
    argv_t = tuple(argv)
    if not argv_t:
        raise SpawnError(argv_t, f"the command is empty ({_CONFIG_HINT})")
    if limit_bytes < 0 or copy_limit_bytes < 0:
        raise ValueError("byte limits must not be negative")
    return argv_t


def _captures(
    limit_bytes: int, copy: PendingFile | None, copy_limit_bytes: int
) -> tuple[_StreamCapture, _StreamCapture]:
    """The captures of stdout (with its raw copy, when asked) and stderr."""
    stdout = _StreamCapture(limit_bytes, copy.file if copy is not None else None, copy_limit_bytes)
    return stdout, _StreamCapture(limit_bytes)


def _drain_logged(
    proc: subprocess.Popen[bytes],
    log_path: Path,
    on_output: Callable[[bytes], None] | None,
    on_start: Callable[[int], None] | None,
    captures: tuple[_StreamCapture, _StreamCapture],
    deadline: float,
    grace_secs: float,
    watch: LimitWatch | None,
) -> tuple[bool, LimitHit | None, _StreamCapture, _StreamCapture]:
    """Wait for the child, both streams shown live in `log_path`: whether the deadline killed
    it, and the limit of its sandbox it reached (`watch`). The child (and its group) is gone
    on return, also when this raised."""
    stdout, stderr = captures
    timed_out = False
    try:
        live = _open_live_log(proc, log_path, on_output)
        stdout.live = stderr.live = live
        try:
            if on_start is not None:
                on_start(proc.pid)
            timed_out = _drain_and_wait(proc, stdout, stderr, deadline, grace_secs, watch)
        finally:
            # Also runs when on_start or the loop raised: nothing we started may outlive us.
            _kill_group_and_reap(proc, watch)
            live.file.close()
    finally:
        failed = not timed_out and proc.returncode not in (None, 0)
        limit = None if watch is None else watch.finish(failed)
    return timed_out, limit, stdout, stderr


def _open_live_log(
    proc: subprocess.Popen[bytes], log_path: Path, on_output: Callable[[bytes], None] | None
) -> _LiveLog:
    try:  # the agent knows the iteration directory: what it planted there is never written
        return _LiveLog(os.fdopen(open_truncate(log_path), "wb", buffering=0), on_output)
    except BaseException:
        _kill_group_and_reap(proc)
        raise


def _write_log(
    log_path: Path, stdout: _StreamCapture, stderr: _StreamCapture, timed_out_after: float | None
) -> None:
    log_text = _format_log(
        bytes(stdout.kept),
        stdout.dropped,
        bytes(stderr.kept),
        stderr.dropped,
        timed_out_after=timed_out_after,
    )
    atomic_write_bytes(log_path, log_text.encode("utf-8"))


def terminate_process_group(pgid: int, grace_secs: float = 2.0) -> bool:
    """SIGTERM the group, wait up to `grace_secs` for it to go, then SIGKILL what is left.

    Returns False if no process of the group could be signalled (already gone). A group whose
    leader is an unreaped child of ours still counts as present until the grace ends.
    """
    if pgid <= 1:
        # killpg(0) or killpg(1) would hit our own group or init's, never an agent's.
        raise ValueError(f"refusing to signal process group {pgid}")
    if not _signal_group(pgid, signal.SIGTERM):
        return False
    give_up_at = time.monotonic() + grace_secs
    while time.monotonic() < give_up_at:
        if not _signal_group(pgid, 0):
            return True
        time.sleep(_GROUP_POLL_SECS)
    _signal_group(pgid, signal.SIGKILL)
    return True


def _format_log(
    stdout: bytes,
    stdout_dropped: int,
    stderr: bytes,
    stderr_dropped: int,
    *,
    timed_out_after: float | None,
) -> str:
    lines: list[str] = []
    for name, kept, dropped in (
        ("stdout", stdout, stdout_dropped),
        ("stderr", stderr, stderr_dropped),
    ):
        text = kept.decode("utf-8", errors="replace")
        lines.append(f"=== {name} ===\n")
        lines.append(text if text == "" or text.endswith("\n") else text + "\n")
        if dropped:
            lines.append(f"[truncated {dropped} bytes]\n")
    if timed_out_after is not None:
        lines.append(f"[timed out after {_seconds(timed_out_after)} s; process group killed]\n")
    return "".join(lines)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@attrs.define(slots=True)
class _LiveLog:
    """The log as it grows while the child runs: every kept piece, in arrival order."""

    file: BinaryIO
    on_output: Callable[[bytes], None] | None = None

    def write(self, piece: bytes) -> None:
        self.file.write(piece)
        if self.on_output is not None:
            self.on_output(piece)


@attrs.define
class _StreamCapture:
    """The first `limit` bytes of one stream, its total size, and an optional raw copy."""

    limit: int
    copy: BinaryIO | None = None
    copy_limit: int = 0
    live: _LiveLog | None = None
    kept: bytearray = attrs.field(factory=bytearray)
    total: int = 0
    copied: int = 0

    @property
    def dropped(self) -> int:
        return self.total - len(self.kept)

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
            if self.live is not None:
                self.live.write(chunk[:room])
        if self.copy is not None and self.copied < self.copy_limit:
            piece = chunk[: self.copy_limit - self.copied]
            self.copy.write(piece)
            self.copied += len(piece)


def _spawn(
    argv: tuple[str, ...],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin_path: Path | None,
    confinement: Confinement | None = None,
) -> tuple[subprocess.Popen[bytes], LimitWatch | None]:
    """The child, and the watch of its sandbox's limits when it is confined."""
    if confinement is None:
        return _popen(argv, argv, (), cwd=cwd, env=env, stdin_path=stdin_path), None
    _check_program(argv, confinement.work_dir, env)
    with launch(confinement, argv, env) as started:
        process = _popen(
            argv,
            started.argv,
            started.fds,
            cwd=confinement.work_dir,
            env=env,
            stdin_path=stdin_path,
        )
        try:
            return process, started.started(process)
        except BaseException:
            _kill_group_and_reap(process)
            raise


def _popen(
    argv: tuple[str, ...],
    started: tuple[str, ...],
    fds: tuple[int, ...],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin_path: Path | None,
) -> subprocess.Popen[bytes]:
    stdin_file = open(stdin_path, "rb") if stdin_path is not None else None  # noqa: SIM115
    try:
        return subprocess.Popen(
            started,
            cwd=cwd,
            env=dict(env),
            stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=fds,
        )
    except OSError as error:
        raise SpawnError(argv, _spawn_failure_reason(error, cwd)) from error
    except ValueError as error:  # e.g. a NUL byte inside an argument
        raise SpawnError(argv, f"{error} ({_CONFIG_HINT})") from error
    finally:
        # The child holds its own copy of the descriptor.
        if stdin_file is not None:
            stdin_file.close()


def _check_program(argv: tuple[str, ...], cwd: Path, env: Mapping[str, str]) -> None:
    """A program bubblewrap could not start is a SpawnError, as without the sandbox: only
    bwrap itself would otherwise say so, as a failed run of the agent or guard."""
    program = argv[0]
    if "\0" in program:
        raise SpawnError(argv, f"embedded null byte ({_CONFIG_HINT})")
    if "/" in program:
        path = cwd / program
        if not path.exists():
            raise SpawnError(argv, f"no such file or directory ({_CONFIG_HINT})")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise SpawnError(argv, f"permission denied, is it executable? ({_CONFIG_HINT})")
        if not _executable_format(path):
            raise SpawnError(argv, f"exec format error ({_CONFIG_HINT})")
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise SpawnError(argv, f"no such file or directory ({_CONFIG_HINT})")


def _executable_format(path: Path) -> bool:
    """Whether the kernel can start `path`: a script (`#!`) or an ELF binary."""
    try:
        with path.open("rb") as file:
            head = file.read(4)
    except OSError:
        return True  # bubblewrap will say what is wrong
    return head.startswith((b"#!", b"\x7fELF"))


def _spawn_failure_reason(error: OSError, cwd: Path) -> str:
    reason = (error.strerror or str(error)).lower()
    if error.filename is not None and os.fsdecode(error.filename) == os.fspath(cwd):
        return f"cannot enter working directory '{cwd}': {reason}"
    if isinstance(error, PermissionError):
        return f"permission denied, is it executable? ({_CONFIG_HINT})"
    return f"{reason} ({_CONFIG_HINT})"


def _drain_and_wait(
    proc: subprocess.Popen[bytes],
    stdout: _StreamCapture,
    stderr: _StreamCapture,
    deadline: float,
    grace_secs: float,
    watch: LimitWatch | None = None,
) -> bool:
    """Read both pipes until the child is done; return whether the deadline killed it. Once
    `watch` says so (its sandbox reached a limit), the child is killed at once. Returns once
    the child has exited and the pipes are at EOF, or once the post-exit window has passed
    with a pipe still held open by some descendant. EINTR is retried by Python."""
    assert proc.stdout is not None and proc.stderr is not None
    pgid = proc.pid
    post_exit_window = min(grace_secs, _POST_EXIT_WINDOW_CAP_SECS)
    timed_out = False
    kill_at: float | None = None
    exited_at: float | None = None
    woke_by = time.monotonic()  # when this loop expected to run again at the latest
    with selectors.DefaultSelector() as selector:
        for pipe, capture in ((proc.stdout, stdout), (proc.stderr, stderr)):
            _watch(selector, pipe.fileno(), capture)
        while True:
            raise_if_interrupted()  # a parallel job's process ends with the loop's signal
            now = time.monotonic()
            # The runner was stopped or starved: the child's time does not shrink by it.
            lost = now - woke_by
            if lost > _SUSPENDED_SECS and not timed_out:
                deadline += lost
            if exited_at is None and reap(proc, watch):
                exited_at = now
            if exited_at is None and watch is not None and watch.stop():
                _signal_group(pgid, signal.SIGKILL)
            if exited_at is None and not timed_out and now >= deadline:
                timed_out = True
                _signal_group(pgid, signal.SIGTERM)
                kill_at = now + grace_secs
            if kill_at is not None and now >= kill_at:
                _signal_group(pgid, signal.SIGKILL)
                kill_at = None
            pipes_open = bool(selector.get_map())
            if exited_at is not None and (not pipes_open or now >= exited_at + post_exit_window):
                _read_what_is_buffered(selector)
                return timed_out

            wake_at = _earliest(
                now + _EXIT_POLL_SECS,
                None if timed_out else deadline,
                kill_at,
                None if exited_at is None else exited_at + post_exit_window,
            )
            wait_secs = max(0.0, wake_at - now)
            woke_by = now + wait_secs
            if not pipes_open:
                wait_ended(proc, watch, wait_secs)  # sooner than a plain sleep
                continue
            for key, _events in selector.select(wait_secs):
                _read_once(selector, key)


def _watch(selector: selectors.BaseSelector, fd: int, capture: _StreamCapture) -> None:
    os.set_blocking(fd, False)
    with contextlib.suppress(OSError):  # a smaller limit: the default size serves
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
    selector.register(fd, selectors.EVENT_READ, capture)


def _earliest(first: float, *moments: float | None) -> float:
    return min([first, *(moment for moment in moments if moment is not None)])


def _read_once(selector: selectors.BaseSelector, key: selectors.SelectorKey) -> bool:
    """Read one chunk if there is one; False at EOF or when nothing is buffered."""
    try:
        chunk = os.read(key.fd, _READ_CHUNK_BYTES)
    except BlockingIOError:
        return False
    if not chunk:
        selector.unregister(key.fd)
        return False
    capture: _StreamCapture = key.data
    capture.feed(chunk)
    return True


def _read_what_is_buffered(selector: selectors.BaseSelector) -> None:
    # A short window can close before the loop read what the child wrote just before exiting.
    for key in list(selector.get_map().values()):
        for _ in range(_FINAL_DRAIN_MAX_READS):
            if not _read_once(selector, key):
                break


def _kill_group_and_reap(proc: subprocess.Popen[bytes], watch: LimitWatch | None = None) -> None:
    # After the leader is gone, whatever is left in its group was started for this step only.
    _signal_group(proc.pid, signal.SIGKILL)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    reap(proc, watch, block=True)


def _signal_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
