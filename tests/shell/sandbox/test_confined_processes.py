"""Processes run in the sandbox through runner_shell.sandbox.processes, with real bubblewrap.

Whatever a sandboxed program starts (a setsid daemon, a double fork, a forkstorm) ends with
it, at its deadline or when it exits. It writes only to its work directory and the writable
binds; the run's repository is hidden, the runner's HOME and /etc are read-only; it cannot see
or signal the runner's processes; without the network it cannot reach a listener on the host's
loopback, with it it can; it gets exactly the environment given. Mode "off" confines nothing.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_core.run.config import Config, SandboxConfig
from runner_shell.sandbox import Confinement, SandboxStatus, sandbox_status
from runner_shell.sandbox.processes import ProcessResult, SpawnError, run_process
from runner_shell.scratch.sandbox import runtime_paths

# The interpreter itself, not a virtualenv's link to it: a virtualenv under /tmp (as in CI) is
# hidden by the private /tmp. The scripts need only the standard library.
PYTHON = os.path.realpath(sys.executable)
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
# How long processes killed with their namespace may take to leave /proc.
REAPED_WITHIN_SECS = 5.0


class Rooms:
    """A slot-like layout under the test's directory: a checkout, a home, an iteration dir
    and a repository that must stay out of reach."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.home = root / "home"
        self.iteration = root / "repo" / ".runner" / "iterations" / "run" / "1"
        self.repo = root / "repo"
        for directory in (self.work, self.home, self.iteration):
            directory.mkdir(parents=True)
        (self.repo / "tree.json").write_text("{}", encoding="utf-8")


@pytest.fixture
def rooms(tmp_path: Path) -> Rooms:
    return Rooms(tmp_path.resolve())


def confine(status: SandboxStatus, rooms: Rooms, *, network: bool = False) -> Confinement:
    confinement = status.confine(
        rooms.work,
        rooms.home,
        writable=(rooms.iteration,),
        read_only=runtime_paths([PYTHON]),  # nothing outside the system is there unless named
        hide=(rooms.repo,),
        network=network,
    )
    assert confinement is not None
    return confinement


def run_confined(
    rooms: Rooms,
    confinement: Confinement | None,
    script: str,
    *,
    timeout_secs: float = 20.0,
    env: dict[str, str] | None = None,
) -> tuple[ProcessResult, str]:
    log = rooms.home.parent / "run.log"
    result = run_process(
        [PYTHON, "-c", textwrap.dedent(script)],
        cwd=rooms.work,
        env=ENV if env is None else env,
        stdin_path=None,
        timeout_secs=timeout_secs,
        log_path=log,
        limit_bytes=100_000,
        grace_secs=0.5,
        confinement=confinement,
    )
    return result, log.read_text(encoding="utf-8")


def processes_marked(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def assert_none_survive(marker: str) -> None:
    give_up_at = time.monotonic() + REAPED_WITHIN_SECS
    while processes_marked(marker) and time.monotonic() < give_up_at:
        time.sleep(0.05)
    assert processes_marked(marker) == []


# Starts a setsid double-forked daemon and a forkstorm of 40 processes that each leave the
# process group, all named by MARKER, then reports how many it started.
SPAWN_EVERYTHING = """
import os, sys, time
MARKER = sys.argv[1] if len(sys.argv) > 1 else {marker!r}
def sleeper():
    os.execv("/bin/sleep", [f"sleep-{{MARKER}}", "300"])
if os.fork() == 0:                     # a classic daemon: fork, setsid, fork again
    os.setsid()
    if os.fork() == 0:
        sleeper()
    os._exit(0)
for _ in range(40):                    # a forkstorm leaving the group
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            sleeper()
        os._exit(0)
time.sleep(0.5)
print("started", flush=True)
{then}
"""


@pytest.fixture
def marker() -> Iterator[str]:
    value = f"runner-sandbox-test-{uuid.uuid4().hex}"
    yield value
    for pid in processes_marked(value):  # never leave a failed test's processes behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def test_at_the_deadline_every_process_it_started_dies_with_it(
    usable_sandbox: SandboxStatus, rooms: Rooms, marker: str
) -> None:
    script = SPAWN_EVERYTHING.format(marker=marker, then="time.sleep(300)")

    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script, timeout_secs=3)

    assert result.timed_out, log
    assert "started" in log
    assert_none_survive(marker)


def test_when_it_exits_every_process_it_started_dies_with_it_at_once(
    usable_sandbox: SandboxStatus, rooms: Rooms, marker: str
) -> None:
    script = SPAWN_EVERYTHING.format(marker=marker, then="")

    started = time.monotonic()
    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script)

    assert result.exit_code == 0, log
    assert time.monotonic() - started < 10
    assert_none_survive(marker)


@pytest.mark.parametrize(
    "target",
    ["repo/tree.json", "repo/new.txt", "HOME/.runner-sandbox-test", "/etc/runner-sandbox-test"],
)
def test_it_cannot_write_outside_its_work_dir_and_writable_binds(
    usable_sandbox: SandboxStatus, rooms: Rooms, target: str
) -> None:
    real_home = Path(os.path.expanduser("~")).resolve()
    path = (
        rooms.repo / target.removeprefix("repo/")
        if target.startswith("repo/")
        else real_home / target.removeprefix("HOME/")
        if target.startswith("HOME/")
        else Path(target)
    )
    script = f"""
    import sys
    try:
        open({str(path)!r}, "w").write("planted")
    except OSError as error:
        print("refused:", error)
        sys.exit(0)
    sys.exit(1)
    """

    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script)

    assert result.exit_code == 0, log
    assert not path.exists() or path.read_text(encoding="utf-8") != "planted"


def test_it_writes_its_work_dir_and_writable_binds_and_sees_no_repository(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    script = f"""
    import os
    open("result.txt", "w").write("work")
    open({str(rooms.iteration / "output.json")!r}, "w").write("{{}}")
    print(sorted(os.listdir({str(rooms.repo)!r})))
    """

    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script)

    assert result.exit_code == 0, log
    assert (rooms.work / "result.txt").read_text(encoding="utf-8") == "work"
    assert (rooms.iteration / "output.json").read_text(encoding="utf-8") == "{}"
    assert "['.runner']" in log  # only the mount point of the iteration directory


def test_it_cannot_see_or_signal_the_runner(usable_sandbox: SandboxStatus, rooms: Rooms) -> None:
    script = f"""
    import os, sys
    try:
        os.kill({os.getpid()}, 0)
    except ProcessLookupError:
        print("no such process")
        sys.exit(0)
    sys.exit(1)
    """

    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script)

    assert result.exit_code == 0, log


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
except OSError as error:
    print("cannot connect:", error)
    sys.exit(3)
print("connected")
"""


def test_without_network_it_cannot_reach_a_listener_on_the_hosts_loopback(
    usable_sandbox: SandboxStatus, rooms: Rooms, listener: int
) -> None:
    confinement = confine(usable_sandbox, rooms, network=False)

    result, log = run_confined(rooms, confinement, CONNECT.format(port=listener))

    assert result.exit_code == 3, log


def test_with_network_it_reaches_a_listener_on_the_hosts_loopback(
    usable_sandbox: SandboxStatus, rooms: Rooms, listener: int
) -> None:
    confinement = confine(usable_sandbox, rooms, network=True)

    result, log = run_confined(rooms, confinement, CONNECT.format(port=listener))

    assert result.exit_code == 0, log
    assert "connected" in log


def test_it_gets_exactly_the_environment_given_and_starts_in_the_checkout(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    env = {**ENV, "HOME": str(rooms.home), "RUNNER_ITER_DIR": str(rooms.iteration)}
    script = """
    import os
    print(sorted(os.environ.items()))
    print("cwd", os.getcwd())
    """

    result, log = run_confined(rooms, confine(usable_sandbox, rooms), script, env=env)

    assert result.exit_code == 0, log
    # The private HOME and the checkout as the process sees them; a path bound at its own
    # path (the writable iteration directory here) as given.
    seen = {**env, "HOME": "/sandbox-home", "PWD": "/checkout"}
    assert str(sorted(seen.items())) in log
    assert "cwd /checkout" in log


def test_the_checkout_and_output_are_seen_at_fixed_paths_and_their_host_paths_not_at_all(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    slot = rooms.repo / ".git" / "runner" / "slots" / "3"
    (slot / "test").mkdir(parents=True)
    (slot / "test" / "a.test.js").write_text("// a test\n", encoding="utf-8")
    output = rooms.iteration / "guard"
    output.mkdir()
    confinement = usable_sandbox.confine(
        slot,
        rooms.home,
        output=output,
        read_only=runtime_paths([PYTHON]),
        hide=(rooms.repo,),
        network=False,
    )
    assert confinement is not None
    env = {**ENV, "HOME": str(rooms.home), "RUNNER_GUARD_REPORT": str(output / "report.xml")}
    script = f"""
    import os
    print("pwd", os.getcwd(), os.environ["PWD"])
    print("files", sorted(os.listdir("test")), os.path.exists("/checkout/test/a.test.js"))
    print("env", sorted(os.environ.items()))
    # (built here: the command's own mention of the slot's path names /checkout)
    print("slot there", os.path.exists(os.path.join({str(slot.parent)!r}, {slot.name!r})))
    open(os.environ["RUNNER_GUARD_REPORT"], "w").write("<testsuites/>")
    """

    result, log = run_confined(rooms, confinement, script, env=env)

    assert result.exit_code == 0, log
    assert "pwd /checkout /checkout" in log
    assert "files ['a.test.js'] True" in log
    assert "('RUNNER_GUARD_REPORT', '/iteration/report.xml')" in log
    env_line = next(line for line in log.splitlines() if line.startswith("env "))
    for host in (slot, rooms.home, output):
        assert str(host) not in env_line
    assert ".git" not in env_line
    assert "slot there False" in log
    assert (output / "report.xml").read_text(encoding="utf-8") == "<testsuites/>"


def test_a_missing_program_is_not_started_as_without_the_sandbox(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    with pytest.raises(SpawnError, match="no such file or directory"):
        run_process(
            ["no-such-agent-program"],
            cwd=rooms.work,
            env=ENV,
            stdin_path=None,
            timeout_secs=5,
            log_path=rooms.home.parent / "run.log",
            limit_bytes=1000,
            confinement=confine(usable_sandbox, rooms),
        )


def test_mode_off_confines_nothing(rooms: Rooms) -> None:
    status = sandbox_status(Config(sandbox=SandboxConfig(mode="off")))
    confinement = status.confine(rooms.work, rooms.home, hide=(rooms.repo,), network=False)
    script = f"""
    import os
    os.kill({os.getpid()}, 0)
    print(sorted(os.listdir({str(rooms.repo)!r})))
    """

    result, log = run_confined(rooms, confinement, script)

    assert confinement is None
    assert (status.mode, status.notice) == ("off", None)
    assert result.exit_code == 0, log
    assert "'.runner', 'tree.json'" in log
