"""The sandbox's threat model (docs/sandbox.md) for the slot, the iteration directory, cleanup
and the import: a hostile agent (or guard) does each, and the run's repository, the runner's own
files and the next iteration stay as the runner means them. Run as root and as an unprivileged
user.

Each test names its row of the threat model's table. The agent is `sh -c <script>` that then
claims done; rows that need a private HOME or a hidden repository run in bubblewrap and are
skipped where it does not work (never under CI=true).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from runner_shell.sandbox.cgroups import cgroup_bases
from runner_shell.sandbox.status import probe
from tests.helpers.crash import cli, read_journal, spawn, wait_for_processes
from tests.helpers.e2e import Project, node

pytestmark = pytest.mark.sandbox_hostile

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
BWRAP = probe()
needs_bwrap = pytest.mark.skipif(
    BWRAP.bwrap is None and os.environ.get("CI") != "true",
    reason=f"bubblewrap is not usable here: {BWRAP.problem}",
)


def hostile(project: Project, script: str, once: bool = False, **config: Any) -> None:
    """The agent runs `script` (in its first iteration only, when `once`), then claims done."""
    if once:
        script = f'case "$RUNNER_ITER_DIR" in */1) {script};; esac'
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"], **config)


def step(project: Project) -> dict[str, Any]:
    result = cli(project, "step")
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    return project.meta(project.run_state()["next_iter"] - 1)


def committed(project: Project, name: str, ref: str = "HEAD") -> str | None:
    result = subprocess.run(
        ["git", "show", f"{ref}:{name}"], cwd=project.root, capture_output=True, text=True
    )
    return result.stdout if result.returncode == 0 else None


# ---------------------------------------------------------------- row 12: cleanup


DEEP = (
    'python3 -c "import os\n'
    "for top in {tops}:\n"
    "    os.chdir(top)\n"
    "    for _ in range(1200): os.mkdir('d'); os.chdir('d')\n"
    "    open('f', 'w').close(); os.chmod('f', 0)\n"
    "    os.mkdir('locked'); open('locked/x', 'w').close(); os.chmod('locked', 0)\n"
    "    os.chdir(top); os.chmod('d', 0o500)\""
)


def test_row12_a_deep_chain_in_the_checkout_never_fails_the_next_step(
    project: Project,
) -> None:
    hostile(project, DEEP.format(tops="[os.getcwd()]"), once=True)
    first = step(project)
    assert first["error_kind"] == "agent", first
    assert "nested more than 200 directories deep; never imported" in first["error"]
    assert len(first["error"]) < 1000
    second = step(project)  # the slot is reset over the chain, its modes fixed
    assert second["error_kind"] is None, second
    assert cli(project, "recover").stdout.startswith("recover: status=clean")


@needs_bwrap
def test_row12_a_deep_chain_in_the_checkout_and_home_sandboxed(project: Project) -> None:
    hostile(
        project,
        DEEP.format(tops="[os.getcwd(), os.environ['HOME']]"),
        once=True,
        sandbox={"mode": "bwrap"},
    )
    assert step(project)["error_kind"] == "agent"
    assert step(project)["error_kind"] is None


# ---------------------------------------------------------------- row 8: the guard's HOME


@needs_bwrap
def test_row8_what_a_guard_leaves_in_its_home_never_reaches_the_next_guard(
    project: Project,
) -> None:
    guard = (
        'if [ -e "$HOME/planted" ]; then exit 0; fi; '
        'touch "$HOME/planted"; mkdir -p "$HOME/.local/lib"; exit 1'
    )
    hostile(
        project,
        "echo work > work.txt",
        sandbox={"mode": "bwrap"},
        guard_command=["sh", "-c", guard],
    )
    for _ in range(2):
        record = step(project)
        assert record["guard"] == "fail", record


# ---------------------------------------------------------------- rows 13, 14: import caps


@pytest.mark.parametrize(
    ("script", "limits", "named"),
    [
        (  # twelve files, each under the per-file cap, over the total
            "for i in $(seq 1 12); do head -c 100000 /dev/zero > big$i.bin; done",
            {"import_limit_bytes": 1_000_000},
            "import_limit_bytes (1,000,000 bytes",
        ),
        (  # many small files in one directory
            "mkdir many && for i in $(seq 1 60); do echo $i > many/$i; done",
            {"import_limit_files": 50},
            "import_limit_files (50 files",
        ),
        (  # twelve files, each under disk_mb, together past it: the checkout's growth
            "for i in $(seq 1 12); do head -c 100000 /dev/zero > big$i.bin; done",
            {"sandbox": {"disk_mb": 1}},
            "the sandbox's disk_mb (1) was reached",
        ),
    ],
)
def test_row13_an_import_past_a_cap_is_an_agent_error_and_nothing_is_imported(
    project: Project, script: str, limits: dict[str, Any], named: str
) -> None:
    hostile(project, f"{script}; echo work > work.txt", **limits)
    record = step(project)
    assert record["error_kind"] == "agent", record
    assert named in record["error"] and "nothing of it is imported" in record["error"]
    assert committed(project, "work.txt") is None
    assert committed(project, "big1.bin") is None and committed(project, "many/1") is None
    for data in (b"\0" * 100_000, b"work\n", b"60\n"):  # never written to the object store
        oid = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        found = subprocess.run(["git", "cat-file", "-e", oid], cwd=project.root, check=False)
        assert found.returncode != 0, data[:10]


def test_row13_under_both_caps_the_work_is_imported(project: Project) -> None:
    hostile(
        project,
        "for i in $(seq 1 12); do head -c 1000 /dev/zero > big$i.bin; done",
        import_limit_bytes=1_000_000,
        import_limit_files=12,
    )
    assert step(project)["error_kind"] is None
    assert committed(project, "big12.bin") == "\0" * 1000


# ---------------------------------------------------------------- row 11: the session's limits

# A bomb that keeps forking (a shell's `bomb | bomb &` dies out by itself under RLIMIT_NPROC).
FORK_BOMB = (
    'python3 -c "import os, time\n'
    "for _ in range(10**6):\n"
    "    try:\n"
    "        os.fork() or time.sleep(60)\n"
    "    except OSError:\n"
    '        pass"'
)
MEMORY_BOMB = 'python3 -c "x = bytearray(512 * 2**20); import time; time.sleep(60)"'
# Allocating in a loop until refused: named by the cgroup's count of kills where there is one,
# else by how near its largest process came to RLIMIT_DATA before it failed.
MEMORY_LOOP = 'python3 -c "hoard = []\nwhile True: hoard.append(bytearray(16 * 2**20))" || exit 1'
FULL_TMP = "head -c 20000000 /dev/zero > /tmp/fill; sleep 60"
# 24 files of 1 MiB under an ignored path: each under RLIMIT_FSIZE, none of them imported.
FULL_DISK = (
    "mkdir -p node_modules/.cache; for i in $(seq 1 24); do "
    "head -c 1048576 /dev/urandom > node_modules/.cache/p$i; done; sleep 60"
)
LIMITS = {"pids_max": 32, "memory_mb": 64, "tmp_mb": 8, "disk_mb": 8}
needs_pids = pytest.mark.skipif(
    os.getuid() == 0 and cgroup_bases().pids is None,
    reason="root without a pids cgroup: pids_max does not hold (validate says limits=no-pids)",
)
needs_memory_cgroup = pytest.mark.skipif(
    cgroup_bases().memory is None,
    reason="memory_mb is each process's RLIMIT_DATA here: one request past it leaves no trace",
)
BOMBS = [
    pytest.param(FORK_BOMB, "pids_max (32)", marks=needs_pids, id="fork-bomb"),
    pytest.param(MEMORY_BOMB, "memory_mb (64)", marks=needs_memory_cgroup, id="memory-bomb"),
    pytest.param(MEMORY_LOOP, "memory_mb (64)", id="memory-loop"),
    pytest.param(FULL_TMP, "tmp_mb (8)", id="full-tmp"),
    pytest.param(FULL_DISK, "disk_mb (8)", id="full-disk"),
]


def assert_counts_outside_tasks(named: str, error: str) -> None:
    """Where RLIMIT_NPROC holds pids_max (no pids cgroup), the line says how many of the
    tasks it counted were outside the sandbox."""
    if named.startswith("pids_max") and cgroup_bases().pids is None:
        assert "of them outside the sandbox" in error, error


@pytest.mark.own_user
@needs_bwrap
@pytest.mark.parametrize(("script", "named"), BOMBS)
def test_row11_an_agent_reaching_a_limit_ends_its_session_as_an_agent_error_naming_it(
    project: Project, script: str, named: str
) -> None:
    gitignore = project.root / ".gitignore"  # where FULL_DISK writes is ignored
    gitignore.write_text((gitignore.read_text() if gitignore.exists() else "") + "node_modules/\n")
    hostile(project, f"echo work > work.txt; {script}", sandbox={"mode": "bwrap", **LIMITS})
    started = time.monotonic()
    record = step(project)
    assert record["error_kind"] == "agent", record
    assert f"the sandbox's {named} was reached; the session was ended" in record["error"]
    assert_counts_outside_tasks(named, record["error"])
    assert time.monotonic() - started < 40  # ended by the runner, not by the agent's deadline
    assert step(project)["error_kind"] == "agent"  # the next session starts afresh


@pytest.mark.own_user
@needs_bwrap
@pytest.mark.parametrize(("script", "named"), BOMBS)
def test_row11_a_guard_reaching_a_limit_fails_the_iteration_naming_it(
    project: Project, script: str, named: str
) -> None:
    hostile(
        project,
        "echo work > work.txt",
        sandbox={"mode": "bwrap", **LIMITS},
        guard_command=["sh", "-c", script],
    )
    record = step(project)
    assert record["error_kind"] == "agent", record
    assert f"the sandbox's {named} was reached by the guard" in record["error"]
    assert_counts_outside_tasks(named, record["error"])


@pytest.mark.own_user
@needs_bwrap
def test_row11_a_setup_reaching_a_limit_says_which_and_runs_again(project: Project) -> None:
    marker = project.harness.parent.parent / f"{project.root.parent.name}-set-up"  # writable
    setup = ["sh", "-c", f"[ -e {marker} ] && exit 0; touch {marker}; {FULL_TMP}"]
    hostile(project, "echo work > work.txt", sandbox={"mode": "bwrap", **LIMITS, "setup": setup})
    first = cli(project, "step")
    assert "[sandbox] setup reached the sandbox's tmp_mb" in first.stderr, first.stderr
    assert "internal error" not in first.stderr
    assert step(project)["error_kind"] is None  # set up again, within its limits this time


# ---------------------------------------------------------------- row 16: recover and symlinks


@pytest.mark.parametrize("swapped", ["run", "iteration"])
def test_row16_recover_never_deletes_outside_through_a_symlinked_directory(
    project: Project, tmp_path: Path, swapped: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = [outside / ".meta.json.abc.tmp", outside / ".x.tmp", outside / "1" / ".y.tmp"]
    hostile(project, "sleep 60")
    runner = spawn(project, "step")
    try:
        wait_for_processes(project, 1)
    finally:
        runner.kill()
        runner.wait()
    run_dir = project.iter_dir(1).parent
    moved = tmp_path / "moved"
    if swapped == "run":
        run_dir.rename(moved)
        run_dir.symlink_to(outside, target_is_directory=True)
    else:
        project.iter_dir(1).rename(moved)
        project.iter_dir(1).symlink_to(outside / "1", target_is_directory=True)
    for path in planted:
        path.parent.mkdir(exist_ok=True)
        path.write_text("keep\n")
    result = cli(project, "recover")
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert all(path.read_text() == "keep\n" for path in planted), result.stderr
    assert sorted(p.name for p in outside.iterdir()) == [".meta.json.abc.tmp", ".x.tmp", "1"]


# ---------------------------------------------------------------- row 9: the iteration directory

FORGED = ("tests.json", "prompt.md", "runner_error.log", "import.log", "guard.rerun-1.log")


def forge(directory: str) -> str:
    """A script writing "forged" into each runner file of `directory` (errors ignored)."""
    names = " ".join(FORGED)
    return f'for n in {names}; do echo forged > "{directory}/$n"; done 2>/dev/null; true'


@needs_bwrap
@pytest.mark.parametrize(
    "forger", ["agent", "agent-next-to-output", "guard", "guard-next-to-report"]
)
def test_row9_neither_agent_nor_guard_writes_a_file_the_runner_archives(
    project: Project, forger: str
) -> None:
    where = {
        "agent": '"$RUNNER_ITER_DIR"',
        "agent-next-to-output": '"$(dirname "$RUNNER_OUTPUT_PATH")/.."',
        "guard": '"$RUNNER_ITER_DIR"',
        "guard-next-to-report": '"$(dirname "$RUNNER_GUARD_REPORT")/.."',
    }[forger]
    script = forge(where.strip('"'))
    if forger.startswith("agent"):
        hostile(project, f"{script}; echo work > work.txt", sandbox={"mode": "bwrap"})
    else:
        guard = ["sh", "-c", f"{script}; exit 0"]
        hostile(project, "echo work > work.txt", sandbox={"mode": "bwrap"}, guard_command=guard)
    record = step(project)
    assert record["error_kind"] is None, record
    iter_dir = project.iter_dir(1)
    for name in FORGED:
        path = iter_dir / name
        assert not path.exists() or path.read_text() != "forged\n", name
        archived = committed(project, f"0-99/1/{name}", ref=f"refs/runner/logs/{project.run_id}")
        assert archived != "forged\n", name
    shown = cli(project, "show", "1", "--tests")
    assert "forged" not in shown.stdout


def test_row9_the_agent_writes_its_files_in_its_own_directory(project: Project) -> None:
    hostile(project, 'echo "$RUNNER_AGENT_DIR" > "$RUNNER_AGENT_DIR/where"')
    step(project)
    agent_dir = project.iter_dir(1) / "agent"
    assert (agent_dir / "where").read_text().strip() == str(agent_dir)
    assert (project.iter_dir(1) / "agent_output.json").read_text().startswith('{"status"')


# ---------------------------------------------------------------- row 5: the slot sees the run


def plant_secrets(project: Project) -> dict[str, str]:
    """Blobs the run's history never reaches: on another branch, in a stash, unreachable."""

    def git_in(*args: str, stdin: str = "") -> str:
        return subprocess.run(
            ["git", *args],
            cwd=project.root,
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            env=project.env,
        ).stdout.strip()

    oids = {}
    for where in ("branch", "stash", "loose"):
        oids[where] = git_in("hash-object", "-w", "--stdin", stdin=f"TOPSECRET-{where}\n")
    for where, ref in (("branch", "refs/heads/other"), ("stash", "refs/stash")):
        tree = git_in("mktree", stdin=f"100644 blob {oids[where]}\tsecret.txt\n")
        commit = git_in(
            "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-m", where
        )
        git_in("update-ref", ref, commit)
    return oids


def reach_script(project: Project, oids: dict[str, str]) -> str:
    """The agent's attempts at the secrets, into $RUNNER_AGENT_DIR/seen: its own git, then a
    throw-away repository borrowing its slot's store, then the run's (each after a marker)."""
    objects = project.root / ".git" / "objects"
    attempts = " ".join(oids.values())
    steal = f"for o in {attempts}; do git -C /tmp/thief cat-file -p $o; done"
    return (
        'out="$RUNNER_AGENT_DIR/seen"; echo "== own" >> "$out"; '
        f'for o in {attempts}; do git cat-file -p $o; done >> "$out" 2>/dev/null; '
        'git log --all --oneline >> "$out" 2>/dev/null; '
        "rm -rf /tmp/thief; git init -q /tmp/thief; "
        'echo "== alt" >> "$out"; '
        "cp .git/objects/info/alternates /tmp/thief/.git/objects/info/alternates; "
        f'{steal} >> "$out" 2>/dev/null; '
        'echo "== run" >> "$out"; '
        f"echo {objects} > /tmp/thief/.git/objects/info/alternates; "
        f'{steal} >> "$out" 2>/dev/null; true'
    )


@pytest.mark.parametrize("mode", ["off", pytest.param("bwrap", marks=needs_bwrap)])
def test_row5_the_slot_never_reaches_objects_outside_the_runs_history(
    project: Project, mode: str
) -> None:
    oids = plant_secrets(project)
    hostile(project, reach_script(project, oids) + "; echo work > work.txt", sandbox={"mode": mode})
    record = step(project)
    assert record["error_kind"] is None, record
    seen = (project.iter_dir(1) / "agent" / "seen").read_text()
    if mode == "bwrap":
        assert "TOPSECRET" not in seen, seen
    else:  # unsandboxed the run's repository is in reach; the slot's own store is not
        assert "TOPSECRET" not in seen.split("== run")[0], seen
    assert committed(project, "work.txt") == "work\n"


def test_row5_the_slots_store_holds_the_base_history_and_fetches_only_what_is_new(
    project: Project,
) -> None:
    oids = plant_secrets(project)
    hostile(project, "echo work > work.txt")
    step(project)
    step(project)
    store = project.root / ".git" / "runner" / "slots" / "0.objects"
    second_base = project.git("rev-parse", "HEAD^").strip()  # the last step started there

    def store_git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "--git-dir", str(store), *args], capture_output=True, text=True
        )

    assert store_git("rev-parse", "refs/base").stdout.strip() == second_base
    for oid in oids.values():
        assert store_git("cat-file", "-e", oid).returncode != 0
    history = store_git("rev-list", "refs/base").stdout.split()
    assert history and set(history) <= set(project.git("rev-list", "HEAD").split())


# ---------------------------------------------------------------- row 7: ignored files


SETUP = ["sh", "-c", "mkdir -p .venv/lib && echo ok > .venv/lib/marker"]
PLANT = (
    "echo 'import os' > .venv/lib/evil.pth 2>/dev/null; "
    "mkdir -p cache && echo planted > cache/plugin.py; echo work > work.txt"
)
# The guard fails when anything the agent planted in an ignored place is there.
CLEAN_GUARD = ["sh", "-c", "test ! -e .venv/lib/evil.pth && test ! -e cache/plugin.py"]


def with_ignored(project: Project) -> None:
    gitignore = project.root / ".gitignore"
    gitignore.write_text(
        gitignore.read_text() + ".venv/\ncache/\n" if gitignore.exists() else ".venv/\ncache/\n"
    )


@pytest.mark.parametrize("mode", ["off", pytest.param("bwrap", marks=needs_bwrap)])
def test_row7_what_an_agent_plants_in_ignored_files_never_reaches_a_later_guard(
    project: Project, mode: str
) -> None:
    with_ignored(project)
    hostile(
        project,
        PLANT,
        once=True,
        sandbox={"mode": mode, "setup": SETUP},
        guard_command=CLEAN_GUARD,
    )
    step(project)
    second = step(project)  # the next node, in the same slot
    assert second["guard"] == "pass", second
    slot = project.root / ".git/runner/slots/0"
    assert (slot / ".venv/lib/marker").read_text() == "ok\n"
    assert not (slot / ".venv/lib/evil.pth").exists() and not (slot / "cache").exists()


@needs_bwrap
def test_row7_setup_output_is_read_only_to_the_sandboxed_agent(project: Project) -> None:
    with_ignored(project)
    hostile(
        project,
        'echo x > .venv/lib/evil.pth; echo rc=$? > "$RUNNER_AGENT_DIR/rc"',
        sandbox={"mode": "bwrap", "setup": SETUP},
        guard_command=CLEAN_GUARD,
    )
    record = step(project)
    assert (project.iter_dir(1) / "agent" / "rc").read_text().strip() != "rc=0"
    assert record["guard"] == "pass", record


# ---------------------------------------------------------------- row 15: .gitattributes


@pytest.mark.parametrize(
    "rule",
    [
        ".runner/state/*.json working-tree-encoding=UTF-32BE",
        "* ident",
        ".runner/** text eol=crlf",
        "* text=auto eol=crlf",
    ],
)
def test_row15_attributes_for_the_runners_files_are_an_agent_error_and_never_apply(
    project: Project, rule: str
) -> None:
    hostile(project, f"echo '{rule}' > .gitattributes; echo work > work.txt", once=True)
    first = step(project)
    assert first["error_kind"] == "agent", first
    assert ".gitattributes: gives the runner's files attributes" in first["error"]
    assert committed(project, ".gitattributes") is None
    second = step(project)  # the run is not wedged
    assert second["error_kind"] is None, second
    json_state = (project.root / ".runner/state/run_state.json").read_bytes()
    assert json_state.startswith(b"{")
    assert cli(project, "audit").returncode in (0, 1)
    assert "not valid JSON" not in cli(project, "status").stderr


def test_row15_attributes_for_the_agents_own_files_are_imported(project: Project) -> None:
    hostile(project, "echo '*.py text eol=lf' > .gitattributes; echo work > work.txt")
    record = step(project)
    assert record["error_kind"] is None, record
    assert committed(project, ".gitattributes") == "*.py text eol=lf\n"


def slow_git(tmp_path: Path) -> tuple[Path, Path]:
    """A `git` on PATH that sleeps before every `fast-import` while its flag file exists: a
    commit that takes long. The directory to put first on PATH, and the flag."""
    bin_dir, flag = tmp_path / "slow-bin", tmp_path / "slow-flag"
    bin_dir.mkdir()
    real = shutil.which("git")
    assert real is not None
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" fast-import "*) [ -e {flag} ] && sleep 60;; esac\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    flag.touch()
    return bin_dir, flag


def test_row14_a_commit_answers_sigterm_and_status_never_shows_it_passed(
    project: Project, tmp_path: Path
) -> None:
    bin_dir, flag = slow_git(tmp_path)
    hostile(project, "echo work > work.txt")
    env = {"PATH": f"{bin_dir}:{project.env['PATH']}"}
    runner = spawn(project, "step", env=env)
    try:
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            journal = read_journal(project)
            if journal is not None and journal.phase.value == "committing":
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the step never reached its commit")
        time.sleep(0.3)  # inside fast-import's sleep
        told = time.monotonic()
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=10)
        assert time.monotonic() - told < 10
    finally:
        runner.kill()
        runner.wait()
    assert runner.returncode != 0
    status = cli(project, "status").stdout
    assert "status: leaves passed=0" in status, status
    assert "interrupted iter=1" in status, status
    flag.unlink()
    recovered = cli(project, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert project.status() == ""
