"""`[sandbox] setup` in a slot: running it, what it left, and when it must run again.

Setup runs when a slot is made. Beside the slot, out of the agent's reach, the ready marker
records the command, a fingerprint of what it made (an unconfined agent that changed it makes
the slot again) and a digest of the `[sandbox] setup_inputs` it ran on (`package.json`,
`uv.lock`): a base whose inputs differ has setup run again at the slot's reset, and so does an
agent's change to one, before its guard (runner_shell.step.agent_and_guard). Each run again is
from nothing: every ignored file goes first, what setup made before and what an agent left
alike, so its output depends only on the checkout's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from runner_core.run.environment import guard_environment
from runner_shell.sandbox.processes import SpawnError, run_process
from runner_shell.scratch.sandbox import Sandbox, runs_confined
from runner_shell.scratch.setup_outputs import setup_outputs, setup_outputs_file
from runner_shell.scratch.slot_git import SlotError, open_below, remove_listed, slot_git
from runner_shell.store.files import atomic_write_bytes

SETUP_TIMEOUT_SECS = 1800.0
SETUP_LOG_LIMIT_BYTES = 100_000
# What setup left that the base ignores: the untracked ignored paths, a directory once.
_IGNORED = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")


class SetupFailed(SlotError):
    """Setup ran and failed: `how` (`exited 1`, `timed out`, a limit reached), its log."""

    def __init__(self, slot: Path, how: str, log: Path) -> None:
        super().__init__(f"[sandbox] setup {how} in {slot}; see {log}")
        self.how = how
        self.log = log


def ready_marker(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: the slot was made and its setup ran."""
    return slot.parent / f"{slot.name}.ready"


def ready_for(slot: Path, setup: Sequence[str], sandbox: Sandbox | None) -> bool:
    """Whether the slot was made with this setup command and what it made is as it left it
    (checked where no sandbox holds it read-only): else it is made again."""
    try:
        marker = ready_marker(slot).read_bytes()
    except OSError:
        return False
    parts = marker.rsplit(b"\n", 2)  # the command's words may hold newlines, the rest not
    if len(parts) != 3:
        return False
    argv, fingerprint, _ = parts
    if argv != _argv_bytes(setup, sandbox):
        return False
    confined = runs_confined(sandbox)
    return confined or not fingerprint or fingerprint == _fingerprint(slot)


def inputs_changed(slot: Path, inputs: Sequence[str]) -> bool:
    """Whether a file of `inputs` in the slot is not as it was when setup last ran there."""
    if not inputs:
        return False
    try:
        marker = ready_marker(slot).read_bytes()
    except OSError:
        return True
    parts = marker.rsplit(b"\n", 2)
    return len(parts) != 3 or parts[2] != inputs_digest(slot, inputs)


def set_up(
    slot: Path,
    setup: Sequence[str],
    inputs: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    log: Path | None = None,
) -> None:
    """Run the `[sandbox] setup` command in the slot (its output in `log`, beside the slot
    unless given); the slot counts as made only once it succeeded, so a failed or interrupted
    setup runs again at the next iteration."""
    ran_on = inputs_digest(slot, inputs)
    if setup:
        _run(slot, setup, sandbox, log or slot.parent / f"{slot.name}.setup.log")
    with contextlib.suppress(FileNotFoundError):
        ready_marker(slot).unlink()
    made = slot_git(slot, *_IGNORED) if setup else b""  # a slot without setup holds none
    tops = sorted({name.rstrip(b"/").split(b"/")[0] for name in made.split(b"\0") if name})
    atomic_write_bytes(setup_outputs_file(slot), b"".join(top + b"\0" for top in tops))
    marker = _argv_bytes(setup, sandbox) + b"\n" + (_fingerprint(slot) if setup else b"")
    atomic_write_bytes(ready_marker(slot), marker + b"\n" + ran_on)


def set_up_again(
    slot: Path,
    setup: Sequence[str],
    inputs: Sequence[str],
    sandbox: Sandbox | None,
    log: Path | None = None,
) -> None:
    """Setup from nothing on the slot's files as they are: every ignored file goes first
    (what setup made before, what an agent left), then setup runs. Until it has succeeded the
    slot is not ready (the next reset makes it again)."""
    ready_marker(slot).unlink(missing_ok=True)
    atomic_write_bytes(setup_outputs_file(slot), b"")
    remove_listed(slot, slot_git(slot, *_IGNORED))
    set_up(slot, setup, inputs, sandbox, log)


def _run(slot: Path, setup: Sequence[str], sandbox: Sandbox | None, log: Path) -> None:
    env = guard_environment(os.environ, ()) if sandbox is None else sandbox.setup_env(os.environ)
    confinement = None
    if sandbox is not None:
        confinement = sandbox.confine(setup, slot, None, network=True, home_name="setup")
    try:
        result = run_process(
            setup,
            confinement=confinement,
            cwd=slot,
            env=env,
            stdin_path=None,
            timeout_secs=SETUP_TIMEOUT_SECS,
            log_path=log,
            limit_bytes=SETUP_LOG_LIMIT_BYTES,
        )
    except SpawnError as error:
        raise SlotError(f"[sandbox] setup could not start: {error.reason}") from None
    if result.exit_code != 0 or result.limit is not None:
        ended = "timed out" if result.timed_out else f"exited {result.exit_code}"
        if result.limit is not None:
            key = result.limit.key
            ended = f"reached the sandbox's {key} (raise [sandbox] {key})"
        raise SetupFailed(slot, ended, log)


def inputs_digest(slot: Path, inputs: Sequence[str]) -> bytes:
    """What the slot's files of `inputs` hold (b"" for none): a file's bytes, or that it is
    absent or not a regular file. None is read through a symlink."""
    if not inputs:
        return b""
    digest = hashlib.sha256()
    for path in inputs:
        digest.update(os.fsencode(path) + b"\0" + _content(slot, path) + b"\n")
    return digest.hexdigest().encode()


def _content(slot: Path, path: str) -> bytes:
    parent, _, name = path.rpartition("/")
    try:
        directory = open_below(slot, parent)
    except OSError:
        return b"absent"
    try:
        # Never blocks (a FIFO opens at once), never follows a symlink.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=directory)
    except OSError:
        return b"absent"
    finally:
        os.close(directory)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return b"not a file"
    with os.fdopen(fd, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest().encode()


def _argv_bytes(setup: Sequence[str], sandbox: Sandbox | None = None) -> bytes:
    """The setup command's words and, when it runs confined, where it saw the checkout:
    what it made may name that path (a `.venv`'s scripts do), so a slot set up unconfined is
    set up again to be used confined, and the other way round."""
    words = b"\0".join(os.fsencode(part) for part in setup)
    confined = runs_confined(sandbox)
    return words + b"\0\0seen at /checkout" if confined and setup else words


def _fingerprint(slot: Path) -> bytes:
    """What the setup outputs are now, every entry's name, kind, mode, size and times: an
    unconfined agent or guard that changed any of them changes this."""
    digest = hashlib.sha256()
    for top in setup_outputs(slot):
        stack = [top]
        while stack:
            directory = stack.pop()
            if not directory.is_dir():
                break
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
            for entry in entries:
                facts = entry.stat(follow_symlinks=False)
                digest.update(os.fsencode(entry.path) + b"\0")
                digest.update(
                    b"%d %d %d %d\n"
                    % (facts.st_mode, facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns)
                )
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
        if top.is_file():
            facts = top.stat()
            digest.update(b"%d %d %d\n" % (facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns))
    return digest.hexdigest().encode()
