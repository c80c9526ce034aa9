"""The subreaper in front of bubblewrap where no memory cgroup holds memory_mb
(runner_shell.sandbox.subreaper): it exits as its command does, reaps what is orphaned to it,
and reports the largest resident set among them, not the runner's."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner_shell.sandbox.limits import subreaper_prefix

# A grandchild orphaned at once (its parent exits), holding 48 MiB for a moment: only a
# subreaper reaps it, and only its reaper sees its peak.
ORPHAN = """
import os, sys, time
if os.fork() == 0:
    held = bytearray(48 * 2**20)
    held[::4096] = b"x" * (len(held) // 4096)
    time.sleep(0.3)
    os._exit(0)
sys.exit(3)
"""


def subreaped(*argv: str, timeout: float = 20.0) -> tuple[int, str, int | None]:
    """The exit code, stderr and reported peak (KiB) of `argv` under the subreaper."""
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [*subreaper_prefix(write_end), *argv],
            pass_fds=(write_end,),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        os.close(write_end)
        write_end = -1
        with os.fdopen(read_end, "rb") as report:
            read_end = -1
            said = report.read()
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    peak = int(said) if said else None
    return done.returncode, done.stderr.decode(), peak


def test_it_exits_as_its_command_did_and_reports_a_peak() -> None:
    code, _, peak = subreaped(sys.executable, "-c", "raise SystemExit(5)")

    assert code == 5
    assert peak is not None and 0 < peak < 64 * 1024


def test_a_command_killed_by_a_signal_kills_it_by_the_same_signal() -> None:
    code, _, peak = subreaped(sys.executable, "-c", "import os; os.kill(os.getpid(), 9)")

    assert code == -signal.SIGKILL
    assert peak is not None


def test_a_command_that_cannot_start_is_127_with_a_line_naming_it() -> None:
    code, stderr, _ = subreaped("/nonexistent/agent")

    assert code == 127
    assert stderr.strip() == (
        "runner subreaper: cannot start /nonexistent/agent: No such file or directory"
    )


def test_an_orphan_is_waited_for_and_its_peak_counted() -> None:
    began = time.monotonic()
    code, _, peak = subreaped(sys.executable, "-c", ORPHAN)

    assert code == 3
    assert time.monotonic() - began >= 0.3  # it waited for the orphan, not just its parent
    assert peak is not None and peak >= 48 * 1024


def test_the_runners_own_resident_set_is_not_in_the_report() -> None:
    held = bytearray(128 * 2**20)
    held[:: resource.getpagesize()] = b"x" * (len(held) // resource.getpagesize())

    _, _, peak = subreaped(sys.executable, "-c", "pass")

    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >= 128 * 1024
    assert peak is not None and peak < 64 * 1024
    del held


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_group_reaches_the_command_and_the_subreaper_waits_for_it(
    signum: int,
) -> None:
    trap = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
        "signal.signal(signal.SIGINT, lambda *a: sys.exit(7))\n"
        "signal.signal(signal.SIGHUP, lambda *a: sys.exit(7))\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    read_end, write_end = os.pipe()
    with subprocess.Popen(
        [*subreaper_prefix(write_end), sys.executable, "-c", trap],
        pass_fds=(write_end,),
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as process:
        os.close(write_end)
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        os.killpg(process.pid, signum)
        assert process.wait(timeout=20) == 7
    with os.fdopen(read_end, "rb") as report:
        assert int(report.read()) > 0


# A runner that starts bubblewrap as the runner does (`--die-with-parent`) under the subreaper,
# a long sleep inside, says the subreaper's pid, then waits for it.
RUNNER = """
import os, subprocess, sys
sys.path[:0] = [sys.argv[1]]
from runner_shell.sandbox.limits import subreaper_prefix
read_end, write_end = os.pipe()
sandbox = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all"]
sandbox += ["--die-with-parent", "--", "sleep", sys.argv[2]]
child = subprocess.Popen([*subreaper_prefix(write_end), *sandbox], pass_fds=(write_end,))
print(child.pid, flush=True)
child.wait()
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_runner_killed_with_sigkill_takes_the_subreaper_and_its_sandbox_along() -> None:
    source, token = str(Path(__file__).resolve().parents[3]), f"{60 + os.getpid() % 1000 / 1000}"
    with subprocess.Popen(
        [sys.executable, "-c", RUNNER, source, token], stdout=subprocess.PIPE, text=True
    ) as runner:
        assert runner.stdout is not None
        subreaper = int(runner.stdout.readline())
        deadline = time.monotonic() + 10
        while not _sleeping(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sleeping(token)
        runner.kill()
        runner.wait(10)
        deadline = time.monotonic() + 10
        while (_alive(subreaper) or _sleeping(token)) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not _alive(subreaper)
    assert not _sleeping(token)


def _sleeping(token: str) -> bool:
    """Whether a `sleep TOKEN` runs anywhere on this machine."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _alive(int(entry)):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if cmdline.read().split(b"\0")[:2] == [b"sleep", token.encode()]:
                        return True
            except OSError:
                continue
    return False


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
