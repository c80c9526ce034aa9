"""A confined agent or guard trying to leave, with real bubblewrap (docs/sandbox.md, rows 1-3, 11).

Each attack is what a hostile agent (or a guard running the agent's tests) did on a sandbox
that bound `/` read-only and kept the caller's capabilities: remount `/` writable, unmount what
hides a path, join the runner's network namespace, make a user namespace of its own, read the
operator's HOME, exhaust memory, processes or /tmp. Each layer is tested where it holds: its
own user namespace with no capabilities, the seccomp filter, the listed file system, the
limits. CI runs this file as root and again as an unprivileged user (.ci/run).
"""

from __future__ import annotations

import os
import resource
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from runner_core.run.config import SandboxConfig
from runner_core.run.sandbox_config import LimitHit
from runner_shell.sandbox import SandboxStatus, bwrap
from runner_shell.sandbox.cgroups import cgroup_bases, made_groups
from runner_shell.sandbox.processes import ProcessResult, run_process
from runner_shell.scratch.sandbox import Sandbox

pytestmark = pytest.mark.escape

PYTHON = os.path.realpath(sys.executable)
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}

# Each escape as Python the confined process runs: it prints what the kernel said and exits 0
# only when every attempt was refused.
SYSCALLS = """
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def said(result):
    return "ok" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
attempts = {
    "remount /": lambda: libc.mount(b"none", b"/", None, MS_REMOUNT | MS_BIND, None),
    "mount tmpfs": lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None),
    "umount /tmp": lambda: libc.umount2(b"/tmp", MNT_DETACH),
    "umount /proc": lambda: libc.umount2(b"/proc", MNT_DETACH),
    "unshare user": lambda: libc.unshare(0x10000000),
    "unshare mount": lambda: libc.unshare(0x00020000),
    "setns net": lambda: libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0),
    "clone newuser": lambda: libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0),
    "keyctl": lambda: libc.syscall(250, 0, 0, 0, 0, 0),
    "ptrace": lambda: libc.ptrace(16, 1, 0, 0),
    "bpf": lambda: libc.syscall(321, 0, 0, 0),
    "perf_event_open": lambda: libc.syscall(298, 0, 0, -1, -1, 0),
    "open_by_handle_at": lambda: libc.syscall(304, -100, 0, 0),
    "userfaultfd": lambda: libc.syscall(323, 0),
}
escaped = []
for name, attempt in attempts.items():
    result = said(attempt())
    print(name, result)
    if result == "ok":
        escaped.append(name)
status = open("/proc/self/status").read()
cap_eff = [line for line in status.splitlines() if line.startswith("CapEff:")][0]
print(cap_eff)
if int(cap_eff.split()[1], 16) != 0:
    escaped.append("capabilities")
sys.exit(1 if escaped else 0)
"""


@attrs.frozen
class Rooms:
    """A slot-like layout: the checkout inside a repository that must stay out of reach."""

    root: Path
    repo: Path
    work: Path
    iteration: Path
    homes: Path


@pytest.fixture
def rooms(tmp_path: Path) -> Rooms:
    root = tmp_path.resolve()
    repo = root / "repo"
    work = repo / ".git" / "runner" / "slots" / "0"
    iteration = repo / ".runner" / "iterations" / "run" / "1"
    for directory in (work, iteration):
        directory.mkdir(parents=True)
    (repo / "tree.json").write_text("{}", encoding="utf-8")
    return Rooms(root, repo, work, iteration, repo / ".git" / "runner" / "slots" / "homes")


def sandbox(status: SandboxStatus, rooms: Rooms, **limits: int) -> Sandbox:
    configured = attrs.evolve(status, sandbox=SandboxConfig(**limits))  # type: ignore[arg-type]
    return Sandbox(configured, (rooms.repo,), rooms.homes)


def run(
    box: Sandbox,
    rooms: Rooms,
    script: str,
    *,
    role: str = "agent",
    timeout_secs: float = 20.0,
    python: str = PYTHON,
    env: dict[str, str] | None = None,
) -> tuple[ProcessResult, str]:
    argv = [python, "-c", textwrap.dedent(script)]
    network = role == "agent"
    confinement = box.confine(argv, rooms.work, rooms.iteration, network, role)
    assert confinement is not None
    log = rooms.root / f"{role}.log"
    env = {**ENV, **(env or {}), "HOME": str(confinement.home)}
    result = run_process(
        argv,
        cwd=rooms.work,
        env=env,
        stdin_path=None,
        timeout_secs=timeout_secs,
        log_path=log,
        limit_bytes=100_000,
        grace_secs=0.5,
        confinement=confinement,
    )
    return result, log.read_text(encoding="utf-8")


# ---------------------------------------------------------------- rows 1 and 2: mounts, namespaces


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_remounting_unmounting_and_joining_namespaces_are_refused_with_no_capabilities(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    result, log = run(sandbox(usable_sandbox, rooms), rooms, SYSCALLS, role=role)

    assert result.exit_code == 0, log
    assert "remount / EPERM" in log
    assert "setns net EPERM" in log
    assert "CapEff:\t0000000000000000" in log


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_the_mount_and_nsenter_programs_fail_too(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    script = """
    import subprocess, sys
    tries = [
        ["mount", "-o", "remount,rw,bind", "/"],
        ["umount", "-l", "/tmp"],
        ["nsenter", "-t", "1", "-n", "true"],
        ["unshare", "-U", "true"],
        ["unshare", "-r", "true"],
    ]
    escaped = [t for t in tries if subprocess.run(t, capture_output=True).returncode == 0]
    print("escaped:", escaped)
    sys.exit(1 if escaped else 0)
    """

    result, log = run(sandbox(usable_sandbox, rooms), rooms, script, role=role)

    assert result.exit_code == 0, log


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_what_it_writes_lands_only_in_its_checkout_and_stays_the_operators(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    venv_pth = Path(sys.prefix) / "runner-escape-test.pth"
    targets = [rooms.repo / "tree.json", rooms.repo / ".git" / "hooks" / "post-commit", venv_pth]
    targets += [Path(os.path.expanduser("~")) / ".bashrc-runner-escape-test"]
    script = f"""
    import os, sys
    open("agent-wrote.txt", "w").write("mine")
    planted = []
    for target in {[str(path) for path in targets]!r}:
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "a") as handle:
                handle.write("planted")
            planted.append(target)
        except OSError as error:
            print("refused", target, error.strerror)
    print("planted", planted)
    print("uid", os.getuid())
    """

    result, log = run(sandbox(usable_sandbox, rooms), rooms, script, role=role)

    assert result.exit_code == 0, log
    for target in targets:
        assert not target.exists() or "planted" not in target.read_text(encoding="utf-8")
    written = rooms.work / "agent-wrote.txt"
    assert written.read_text(encoding="utf-8") == "mine"
    assert (written.stat().st_uid, written.stat().st_gid) == (os.getuid(), os.getgid())
    if os.getuid() == 0:
        assert "uid 1000" in log  # an unprivileged user inside its own namespace


# ---------------------------------------------------------------- row 3: nothing not listed


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_every_home_the_repository_and_the_hosts_state_are_absent(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    real_home = Path(os.path.expanduser("~")).resolve()
    secret = rooms.root / "outside-secret.txt"
    secret.write_text("the operator's", encoding="utf-8")
    box = sandbox(usable_sandbox, rooms)
    confinement = box.confine([PYTHON], rooms.work, rooms.iteration, True, role)
    assert confinement is not None
    bound = (*confinement.read_only, *confinement.writable, confinement.work_dir, confinement.home)
    absent = [real_home / ".ssh", real_home / ".gitconfig", real_home / ".codex"]
    absent += [Path(name) for name in ("/var", "/srv", "/mnt", "/media", "/run", "/opt")]
    absent += [rooms.repo / "tree.json", secret]
    # A home directory holds at most the mount points of what is bound below it (the runner's
    # interpreter under /root/.pyenv, say), never the operator's files.
    homes = [real_home, Path("/root"), Path("/home")]
    script = f"""
    import os
    for path in {[str(path) for path in absent]!r}:
        print(path, "present" if os.path.lexists(path) else "absent")
    for home in {[str(path) for path in homes]!r}:
        print("lists", home, sorted(os.listdir(home)) if os.path.isdir(home) else [])
    for path in ("/etc/shadow", "/etc/gshadow"):
        try:
            print(path, "bytes", len(open(path, "rb").read()))
        except OSError as error:
            print(path, "unreadable", error.strerror)
    print("repo lists", sorted(os.listdir({str(rooms.repo)!r})))
    """

    result, log = run(box, rooms, script, role=role)

    assert result.exit_code == 0, log
    assert "present" not in log, log
    for home in homes:
        shown = {path.relative_to(home).parts[0] for path in bound if path.is_relative_to(home)}
        assert f"lists {home} {sorted(shown)}" in log
    assert "/etc/shadow bytes 0" in log or "/etc/shadow unreadable" in log
    # Nothing is bound inside it: the slot, the iteration's directory and the HOME are seen at
    # /checkout, /iteration and /sandbox-home.
    assert "repo lists []" in log


def test_the_runner_s_own_interpreter_and_the_system_still_run(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    script = """
    import subprocess, sys
    print(subprocess.run(["/bin/sh", "-c", "ls /usr/bin/env && git --version"],
                         capture_output=True, text=True).stdout)
    import runner_core
    print("runner_core", runner_core.__name__)
    """

    # The virtualenv's python, as a `command` agent or the demo agent runs it (with the import
    # path the runner has, as `[sandbox] env = ["PYTHONPATH"]` would pass it: CI's second pass
    # runs the runner from a copy of the clone that way).
    own = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    box = sandbox(usable_sandbox, rooms)
    result, log = run(box, rooms, script, python=sys.executable, env=own)

    assert result.exit_code == 0, log
    assert "git version" in log
    assert "runner_core runner_core" in log


# ---------------------------------------------------------------- row 11: limits


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_a_memory_bomb_ends_at_memory_mb(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    script = """
    import sys, time
    hoard = []
    try:
        for _ in range(64):
            hoard.append(bytearray(16 * 1024 * 1024))
    except MemoryError:
        print("MemoryError after", len(hoard) * 16, "MiB")
        sys.exit(9)
    """

    box = sandbox(usable_sandbox, rooms, memory_mb=64)
    result, log = run(box, rooms, script, role=role)

    assert result.limit == LimitHit("memory_mb"), log
    if cgroup_bases().memory is not None:  # the sandbox's total, the kernel's count of kills
        assert result.exit_code != 0, log
    else:  # each process's RLIMIT_DATA: the allocation fails, its peak says how near it came
        assert result.exit_code == 9, log
        assert "MemoryError after" in log


MEMORY_BOMBS = {
    # Python allocating in a loop until refused, as a program reaching its limit does.
    "loop": """
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))
    """,
    # A child of a shell, the shell failing after it: the child's peak is in the shell's use.
    "child": """
    import subprocess, sys
    bomb = "hoard = []\\nwhile True: hoard.append(bytearray(8 * 2**20))"
    sys.exit(subprocess.run([sys.executable, "-c", bomb]).returncode and 3)
    """,
}


@pytest.mark.parametrize("bomb", sorted(MEMORY_BOMBS))
@pytest.mark.parametrize("role", ["agent", "guard"])
def test_without_a_memory_cgroup_a_memory_bomb_is_named_by_how_near_it_came(
    usable_sandbox: SandboxStatus,
    rooms: Rooms,
    role: str,
    bomb: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bwrap, "sandbox_group", lambda pids, memory: None)  # rlimits only
    box = sandbox(usable_sandbox, rooms, memory_mb=64)

    result, log = run(box, rooms, MEMORY_BOMBS[bomb], role=role)

    assert result.exit_code not in (None, 0), log
    assert "MemoryError" in log
    assert result.limit == LimitHit("memory_mb"), log


def test_without_a_memory_cgroup_a_failure_far_below_memory_mb_is_not_memory(
    usable_sandbox: SandboxStatus, rooms: Rooms, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bwrap, "sandbox_group", lambda pids, memory: None)
    box = sandbox(usable_sandbox, rooms, memory_mb=1024)

    failed, log = run(box, rooms, "x = bytearray(32 * 2**20); raise SystemExit(4)")
    refused, refused_log = run(box, rooms, "x = bytearray(4 * 2**30)")  # refused outright

    assert (failed.exit_code, failed.limit) == (4, None), log
    assert refused.exit_code == 1 and "MemoryError" in refused_log, refused_log
    assert refused.limit is None  # one request far past what it held: the program says so


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_without_a_memory_cgroup_the_runners_own_memory_is_not_the_sessions(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A child's resident peak starts at its parent's (the kernel keeps the largest set of the
    # memory it left at exec): a runner holding 96 MiB must not make a small failure memory.
    monkeypatch.setattr(bwrap, "sandbox_group", lambda pids, memory: None)
    box = sandbox(usable_sandbox, rooms, memory_mb=64)
    held = bytearray(96 * 2**20)
    held[:: resource.getpagesize()] = b"x" * (len(held) // resource.getpagesize())

    result, log = run(box, rooms, "x = bytearray(2**20); raise SystemExit(4)", role=role)

    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >= 96 * 1024
    assert (result.exit_code, result.limit) == (4, None), log
    del held


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_a_full_tmp_ends_the_session_at_tmp_mb(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    script = """
    import errno, time
    written = 0
    try:
        with open("/tmp/fill", "wb") as handle:
            while written < 256 * 1024 * 1024:
                handle.write(b"x" * 1024 * 1024)
                handle.flush()
                written += 1024 * 1024
    except OSError as error:
        print("full after", written // 2**20, "MiB:", errno.errorcode[error.errno], flush=True)
    time.sleep(60)  # a program that hangs on: the runner ends it, not its deadline
    """

    box = sandbox(usable_sandbox, rooms, tmp_mb=16)
    result, log = run(box, rooms, script, role=role, timeout_secs=60)

    assert result.limit == LimitHit("tmp_mb"), log
    assert not result.timed_out
    assert result.duration_ms < 20_000
    assert "ENOSPC" in log


def test_a_full_tmp_is_seen_of_a_program_that_fills_it_and_exits_at_once(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    script = """
    try:
        with open("/tmp/fill", "wb") as handle:
            handle.write(b"x" * 64 * 1024 * 1024)
    except OSError:
        pass
    """

    result, log = run(sandbox(usable_sandbox, rooms, tmp_mb=8), rooms, script)

    assert result.limit == LimitHit("tmp_mb"), log  # killed once seen full, or seen after it ended


@pytest.mark.own_user
def test_a_session_within_its_limits_reaches_none(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    script = """
    import os
    with open("/tmp/some", "wb") as handle:
        handle.write(b"x" * 4 * 1024 * 1024)
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    """

    box = sandbox(usable_sandbox, rooms, tmp_mb=16, pids_max=32, memory_mb=256)
    result, log = run(box, rooms, script)

    assert (result.exit_code, result.limit) == (0, None), log


def test_a_file_larger_than_disk_mb_is_refused(usable_sandbox: SandboxStatus, rooms: Rooms) -> None:
    script = """
    import signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        with open("big.bin", "wb") as handle:
            for _ in range(64):
                handle.write(b"x" * 1024 * 1024)
    except OSError as error:
        print("refused:", error.strerror)
        sys.exit(9)
    """

    result, log = run(sandbox(usable_sandbox, rooms, disk_mb=8), rooms, script)

    assert result.exit_code == 9, log
    assert (rooms.work / "big.bin").stat().st_size <= 8 * 1024 * 1024


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_a_checkout_grown_past_disk_mb_under_an_ignored_path_ends_the_session(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    script = """
    import os, time
    os.makedirs("node_modules/.cache", exist_ok=True)
    for number in range(24):  # each file under RLIMIT_FSIZE, together three times disk_mb
        with open(f"node_modules/.cache/part{number}", "wb") as handle:
            handle.write(os.urandom(1024 * 1024))
    print("wrote 24 MiB", flush=True)
    time.sleep(60)  # a program that hangs on: the runner ends it, not its deadline
    """

    box = sandbox(usable_sandbox, rooms, disk_mb=8)
    result, log = run(box, rooms, script, role=role, timeout_secs=60)

    assert result.limit == LimitHit("disk_mb"), log
    assert not result.timed_out
    assert result.duration_ms < 20_000


def test_a_checkout_within_disk_mb_reaches_no_limit(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    (rooms.work / "before.bin").write_bytes(os.urandom(12 * 1024 * 1024))  # not its growth
    script = """
    import os, time
    with open("grown.bin", "wb") as handle:
        handle.write(os.urandom(4 * 1024 * 1024))
    time.sleep(1.5)  # counted at least once more while it runs
    """

    result, log = run(sandbox(usable_sandbox, rooms, disk_mb=8), rooms, script)

    assert (result.exit_code, result.limit) == (0, None), log


@pytest.mark.own_user
@pytest.mark.skipif(
    os.getuid() == 0 and cgroup_bases().pids is None,
    reason="root without a pids cgroup: RLIMIT_NPROC never binds root (validate says so)",
)
@pytest.mark.parametrize("role", ["agent", "guard"])
def test_a_fork_bomb_ends_the_session_at_pids_max(
    usable_sandbox: SandboxStatus, rooms: Rooms, role: str
) -> None:
    script = """
    import os, time
    children = refused = 0
    give_up_at = time.monotonic() + 60
    while time.monotonic() < give_up_at:  # a bomb that keeps trying: only the runner ends it
        try:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            children += 1
        except OSError:
            refused += 1
            if refused == 1:
                print("refused after", children, flush=True)
    """

    box = sandbox(usable_sandbox, rooms, pids_max=32)
    result, log = run(box, rooms, script, role=role, timeout_secs=60)

    assert result.limit is not None and result.limit.key == "pids_max", log
    assert not result.timed_out
    assert result.duration_ms < 20_000


@pytest.mark.skipif(
    os.getuid() != 0 or cgroup_bases().pids is None, reason="root with a pids cgroup"
)
def test_a_root_runner_s_sandbox_is_in_a_cgroup_of_its_own_removed_once_empty(
    usable_sandbox: SandboxStatus, rooms: Rooms
) -> None:
    box = sandbox(usable_sandbox, rooms, pids_max=32)

    first, log = run(box, rooms, "print(open('/proc/self/cgroup').read())")
    second, _ = run(box, rooms, "pass")

    assert (first.exit_code, second.exit_code) == (0, 0), log
    groups = made_groups()  # the first one's groups went when the second's were made
    assert len(groups) == len({cgroup_bases().pids, cgroup_bases().memory} - {None})
    pids = next(group for group in groups if (group / "pids.max").exists())
    assert (pids / "pids.max").read_text(encoding="ascii").strip() == "32"
    assert "pids:/\n" in log  # its own cgroup namespace: the group is its root, its name unseen
