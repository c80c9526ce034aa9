"""Specification of runner_shell.sandbox.processes, exercised with real child processes."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from runner_shell.sandbox.processes import (
    ProcessResult,
    SpawnError,
    run_process,
    terminate_process_group,
)
from tests.helpers.processes import succeeded

PYTHON = sys.executable
BASE_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
CONFIG_HINT = "(check the command in .runner/state/config.toml)"


def run_python(
    tmp_path: Path,
    script: str,
    *,
    env: Mapping[str, str] = BASE_ENV,
    stdin_path: Path | None = None,
    timeout_secs: float = 10.0,
    limit_bytes: int = 100_000,
    stdout_copy_path: Path | None = None,
    stdout_copy_limit_bytes: int = 64 * 1024 * 1024,
    grace_secs: float = 2.0,
    on_start: Callable[[int], None] | None = None,
) -> ProcessResult:
    return run_process(
        [PYTHON, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        env=env,
        stdin_path=stdin_path,
        timeout_secs=timeout_secs,
        log_path=log_path(tmp_path),
        limit_bytes=limit_bytes,
        stdout_copy_path=stdout_copy_path,
        stdout_copy_limit_bytes=stdout_copy_limit_bytes,
        grace_secs=grace_secs,
        on_start=on_start,
    )


def log_path(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "run.log"


def read_log(tmp_path: Path) -> str:
    return log_path(tmp_path).read_text(encoding="utf-8")


def is_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie (killed orphans may wait for init to reap them)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_until_dead(pid: int, within_secs: float = 2.0) -> bool:
    give_up_at = time.monotonic() + within_secs
    while time.monotonic() < give_up_at:
        if not is_alive(pid):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def stray_pids() -> Iterator[list[int]]:
    """Pids a test spawned outside any group we kill; they are SIGKILLed afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


SPAWN_SLEEPING_GRANDCHILD = """
    import os, subprocess, sys, time
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session={escape}
    )
    with open("grandchild.pid.tmp", "w") as f:
        f.write(str(child.pid))
    os.rename("grandchild.pid.tmp", "grandchild.pid")
    print("parent done", flush=True)
    {then}
"""


def grandchild_pid(tmp_path: Path) -> int:
    return int((tmp_path / "grandchild.pid").read_text())


# --- exit codes, stdin, env, cwd -------------------------------------------------------------


def test_exit_code_zero_is_success(tmp_path: Path) -> None:
    result = run_python(tmp_path, "pass")
    assert result.exit_code == 0
    assert not result.timed_out
    assert succeeded(result)
    assert result.argv[0] == PYTHON


def test_nonzero_exit_code_is_reported_and_is_not_success(tmp_path: Path) -> None:
    result = run_python(tmp_path, "import sys; sys.exit(3)")
    assert result.exit_code == 3
    assert not result.timed_out
    assert not succeeded(result)


def test_stdin_is_fed_from_the_given_file(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("do the task\nline two\n")
    run_python(tmp_path, "import sys; print(sys.stdin.read().upper(), end='')", stdin_path=prompt)
    assert read_log(tmp_path) == "=== stdout ===\nDO THE TASK\nLINE TWO\n=== stderr ===\n"


def test_stdin_is_empty_without_a_stdin_path(tmp_path: Path) -> None:
    run_python(tmp_path, "import sys; print(repr(sys.stdin.read()))")
    assert read_log(tmp_path) == "=== stdout ===\n''\n=== stderr ===\n"


def test_environment_is_exactly_the_given_mapping(tmp_path: Path) -> None:
    env = {"RUNNER_ROLE": "executor", "WITH_SPACE": "a b", "EMPTY": ""}
    run_process(
        ["/usr/bin/env"],
        cwd=tmp_path,
        env=env,
        stdin_path=None,
        timeout_secs=10.0,
        log_path=log_path(tmp_path),
        limit_bytes=10_000,
    )
    stdout = read_log(tmp_path).split("=== stderr ===")[0].removeprefix("=== stdout ===\n")
    assert sorted(stdout.splitlines()) == ["EMPTY=", "RUNNER_ROLE=executor", "WITH_SPACE=a b"]


def test_child_runs_in_the_given_working_directory(tmp_path: Path) -> None:
    workdir = tmp_path / "repo"
    workdir.mkdir()
    run_process(
        [PYTHON, "-c", "import os; print(os.getcwd())"],
        cwd=workdir,
        env=BASE_ENV,
        stdin_path=None,
        timeout_secs=10.0,
        log_path=log_path(tmp_path),
        limit_bytes=10_000,
    )
    assert read_log(tmp_path) == f"=== stdout ===\n{workdir.resolve()}\n=== stderr ===\n"


def test_on_start_receives_the_child_pid_which_is_its_own_group_and_session(
    tmp_path: Path,
) -> None:
    started: list[int] = []
    run_python(
        tmp_path,
        "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))",
        on_start=started.append,
    )
    (pid,) = started
    assert read_log(tmp_path) == f"=== stdout ===\n{pid} {pid} {pid}\n=== stderr ===\n"


def test_on_start_failure_kills_the_child_and_propagates(tmp_path: Path) -> None:
    started: list[int] = []

    def journal_fails(pid: int) -> None:
        started.append(pid)
        raise RuntimeError("journal is full")

    begin = time.monotonic()
    with pytest.raises(RuntimeError, match="journal is full"):
        run_python(tmp_path, "import time; time.sleep(30)", on_start=journal_fails)
    assert time.monotonic() - begin < 3.0
    assert not is_alive(started[0])


# --- log format and truncation ---------------------------------------------------------------


def test_log_has_stdout_then_stderr_sections_ending_in_newlines(tmp_path: Path) -> None:
    run_python(tmp_path, "import sys; sys.stdout.write('out\\n'); sys.stderr.write('err')")
    assert read_log(tmp_path) == "=== stdout ===\nout\n=== stderr ===\nerr\n"


def test_log_of_a_silent_process_has_two_empty_sections(tmp_path: Path) -> None:
    run_python(tmp_path, "pass")
    assert read_log(tmp_path) == "=== stdout ===\n=== stderr ===\n"


def test_log_parent_directories_are_created_and_no_temp_file_is_left(tmp_path: Path) -> None:
    run_python(tmp_path, "print('hi')")
    assert sorted(p.name for p in log_path(tmp_path).parent.iterdir()) == ["run.log"]


def test_each_stream_keeps_its_first_limit_bytes_and_counts_the_dropped_rest(
    tmp_path: Path,
) -> None:
    result = run_python(
        tmp_path,
        "import sys; sys.stdout.write('a' * 25); sys.stderr.write('b' * 17)",
        limit_bytes=10,
    )
    assert read_log(tmp_path) == (
        "=== stdout ===\naaaaaaaaaa\n[truncated 15 bytes]\n"
        "=== stderr ===\nbbbbbbbbbb\n[truncated 7 bytes]\n"
    )
    assert (result.stdout_bytes, result.stderr_bytes) == (25, 17)


def test_output_exactly_at_the_limit_is_not_marked_truncated(tmp_path: Path) -> None:
    run_python(tmp_path, "import sys; sys.stdout.write('x' * 9 + '\\n')", limit_bytes=10)
    assert read_log(tmp_path) == "=== stdout ===\nxxxxxxxxx\n=== stderr ===\n"


def test_invalid_utf8_output_is_logged_with_replacement_characters(tmp_path: Path) -> None:
    result = run_python(
        tmp_path, "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe\\x80 end\\n')"
    )
    assert succeeded(result)
    assert read_log(tmp_path) == "=== stdout ===\nok \ufffd\ufffd\ufffd end\n=== stderr ===\n"


def test_child_that_closes_stdout_early_still_completes(tmp_path: Path) -> None:
    script = """
        import os, sys, time
        os.close(1)
        sys.stderr.write("still here\\n")
        sys.stderr.flush()
        time.sleep(0.2)
        os._exit(0)
    """
    result = run_python(tmp_path, script)
    assert succeeded(result)
    assert read_log(tmp_path) == "=== stdout ===\n=== stderr ===\nstill here\n"


# --- draining ----------------------------------------------------------------------------------


def test_large_stderr_written_before_stdout_does_not_deadlock(tmp_path: Path) -> None:
    script = """
        import sys
        sys.stderr.buffer.write(b"e" * (1 << 20))
        sys.stderr.flush()
        print("done")
    """
    result = run_python(tmp_path, script, limit_bytes=1000, timeout_secs=10.0)
    assert succeeded(result)
    assert (result.stdout_bytes, result.stderr_bytes) == (5, 1 << 20)
    assert read_log(tmp_path).startswith("=== stdout ===\ndone\n=== stderr ===\n")


def test_hundreds_of_megabytes_of_stdout_are_counted_but_never_held_in_memory(
    tmp_path: Path,
) -> None:
    mebibytes = 200
    script = f"""
        import sys
        block = b"x" * (1 << 20)
        for _ in range({mebibytes}):
            sys.stdout.buffer.write(block)
    """
    peak_rss_kib_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_python(tmp_path, script, limit_bytes=1000, timeout_secs=30.0)
    peak_rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_rss_kib_before

    assert succeeded(result)
    assert result.stdout_bytes == mebibytes << 20
    assert result.stderr_bytes == 0
    expected = (
        "=== stdout ===\n" + "x" * 1000 + f"\n[truncated {(mebibytes << 20) - 1000} bytes]\n"
        "=== stderr ===\n"
    )
    assert read_log(tmp_path) == expected
    assert peak_rss_growth_kib < 32 * 1024


# --- timeouts and process groups ---------------------------------------------------------------


def test_timeout_kills_the_whole_process_group_including_grandchildren(tmp_path: Path) -> None:
    script = SPAWN_SLEEPING_GRANDCHILD.format(escape=False, then="time.sleep(30)")
    begin = time.monotonic()
    result = run_python(tmp_path, script, timeout_secs=1.0, grace_secs=0.5)
    assert time.monotonic() - begin < 4.0
    assert result.timed_out
    assert result.exit_code is None
    assert not succeeded(result)
    assert wait_until_dead(grandchild_pid(tmp_path))


def test_timeout_is_recorded_as_the_last_line_of_the_log(tmp_path: Path) -> None:
    script = "import time; print('started', flush=True); time.sleep(30)"
    run_python(tmp_path, script, timeout_secs=0.5, grace_secs=0.5)
    assert read_log(tmp_path) == (
        "=== stdout ===\nstarted\n=== stderr ===\n[timed out after 0.5 s; process group killed]\n"
    )


def test_child_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    script = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(30)
    """
    started: list[int] = []
    result = run_python(tmp_path, script, timeout_secs=1.0, grace_secs=0.3, on_start=started.append)
    assert result.timed_out
    assert result.exit_code is None
    assert 1250 <= result.duration_ms < 4000
    assert not is_alive(started[0])


def test_daemon_grandchild_holding_the_pipes_does_not_keep_the_call_waiting(
    tmp_path: Path,
) -> None:
    script = SPAWN_SLEEPING_GRANDCHILD.format(escape=False, then="")
    begin = time.monotonic()
    result = run_python(tmp_path, script, grace_secs=0.5)
    assert time.monotonic() - begin < 3.0
    assert succeeded(result)
    assert read_log(tmp_path).startswith("=== stdout ===\nparent done\n")
    assert wait_until_dead(grandchild_pid(tmp_path))


def test_grandchild_escaped_with_setsid_holding_the_pipes_does_not_keep_the_call_waiting(
    tmp_path: Path, stray_pids: list[int]
) -> None:
    script = SPAWN_SLEEPING_GRANDCHILD.format(escape=True, then="")
    begin = time.monotonic()
    result = run_python(tmp_path, script, grace_secs=0.5)
    stray_pids.append(grandchild_pid(tmp_path))
    assert time.monotonic() - begin < 3.0
    assert succeeded(result)
    assert not result.timed_out


# --- spawn failures ------------------------------------------------------------------------------


def test_missing_binary_raises_spawn_error_with_a_one_line_message(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-agent")
    with pytest.raises(SpawnError) as caught:
        run_process(
            [missing, "--flag"],
            cwd=tmp_path,
            env=BASE_ENV,
            stdin_path=None,
            timeout_secs=1.0,
            log_path=log_path(tmp_path),
            limit_bytes=100,
        )
    assert str(caught.value) == f"cannot start '{missing}': no such file or directory {CONFIG_HINT}"
    assert caught.value.argv == (missing, "--flag")
    assert not log_path(tmp_path).exists()


def test_command_not_on_path_raises_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(SpawnError) as caught:
        run_process(
            ["runner-no-such-cmd"],
            cwd=tmp_path,
            env=BASE_ENV,
            stdin_path=None,
            timeout_secs=1.0,
            log_path=log_path(tmp_path),
            limit_bytes=100,
        )
    assert str(caught.value) == (
        f"cannot start 'runner-no-such-cmd': no such file or directory {CONFIG_HINT}"
    )


def test_non_executable_file_raises_spawn_error_with_a_one_line_message(tmp_path: Path) -> None:
    script = tmp_path / "guard.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    with pytest.raises(SpawnError) as caught:
        run_process(
            [str(script)],
            cwd=tmp_path,
            env=BASE_ENV,
            stdin_path=None,
            timeout_secs=1.0,
            log_path=log_path(tmp_path),
            limit_bytes=100,
        )
    message = str(caught.value)
    assert message.startswith(f"cannot start '{script}': permission denied")
    assert "\n" not in message
    assert caught.value.reason in message


def test_empty_command_raises_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match="the command is empty"):
        run_process(
            [],
            cwd=tmp_path,
            env=BASE_ENV,
            stdin_path=None,
            timeout_secs=1.0,
            log_path=log_path(tmp_path),
            limit_bytes=100,
        )


def test_missing_working_directory_raises_spawn_error_naming_it(tmp_path: Path) -> None:
    missing_dir = tmp_path / "gone"
    with pytest.raises(
        SpawnError, match=re.escape(f"cannot enter working directory '{missing_dir}'")
    ):
        run_process(
            [PYTHON, "-c", "pass"],
            cwd=missing_dir,
            env=BASE_ENV,
            stdin_path=None,
            timeout_secs=1.0,
            log_path=log_path(tmp_path),
            limit_bytes=100,
        )


# --- raw stdout copy -----------------------------------------------------------------------------


def test_stdout_copy_receives_the_raw_bytes_beyond_the_log_limit(tmp_path: Path) -> None:
    copy_path = tmp_path / "iter" / "events.jsonl"
    result = run_python(
        tmp_path,
        "import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)",
        limit_bytes=100,
        stdout_copy_path=copy_path,
    )
    assert result.stdout_bytes == 1024
    assert copy_path.read_bytes() == bytes(range(256)) * 4
    assert [p.name for p in copy_path.parent.iterdir()] == ["events.jsonl"]


def test_stdout_copy_stops_at_its_own_limit(tmp_path: Path) -> None:
    copy_path = tmp_path / "events.jsonl"
    result = run_python(
        tmp_path,
        "import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)",
        limit_bytes=10_000,
        stdout_copy_path=copy_path,
        stdout_copy_limit_bytes=300,
    )
    assert result.stdout_bytes == 1024
    assert copy_path.read_bytes() == (bytes(range(256)) * 2)[:300]
    assert read_log(tmp_path).count("\n[truncated") == 0


# --- terminate_process_group ------------------------------------------------------------------


def spawn_group(script: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start `script` as a new process group; return it and the first line it prints."""
    proc = subprocess.Popen(
        [PYTHON, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().decode().strip()


def test_terminate_process_group_terminates_a_live_group_with_its_grandchildren() -> None:
    proc, line = spawn_group(
        """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        print(child.pid, flush=True)
        time.sleep(30)
        """
    )
    assert terminate_process_group(proc.pid, grace_secs=0.3) is True
    assert proc.wait(timeout=2) == -signal.SIGTERM
    assert wait_until_dead(int(line))
    assert proc.stdout is not None
    proc.stdout.close()


def test_terminate_process_group_kills_a_group_that_ignores_sigterm() -> None:
    proc, line = spawn_group(
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(30)
        """
    )
    assert line == "ready"
    assert terminate_process_group(proc.pid, grace_secs=0.3) is True
    assert proc.wait(timeout=2) == -signal.SIGKILL
    assert proc.stdout is not None
    proc.stdout.close()


def test_terminate_process_group_on_a_gone_group_returns_false() -> None:
    proc = subprocess.Popen([PYTHON, "-c", "pass"], start_new_session=True)
    proc.wait()
    assert terminate_process_group(proc.pid, grace_secs=0.3) is False
