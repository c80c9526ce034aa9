"""A step whose agent and guard run in bubblewrap: whatever a hostile agent tries from inside,
the run's repository, the runner's processes and the world outside stay out of its reach, and
the loop goes on. Skipped where bubblewrap does not work, except under CI=true."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from runner_shell.sandbox.status import probe
from tests.helpers.crash import cli
from tests.helpers.e2e import Project, node

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
BWRAP = probe()

pytestmark = pytest.mark.skipif(
    BWRAP.bwrap is None and os.environ.get("CI") != "true",
    reason=f"bubblewrap is not usable here: {BWRAP.problem}",
)


def sandboxed(project: Project, script: str, **config: Any) -> None:
    config.setdefault("sandbox", {"mode": "bwrap"})
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"], **config)


def step(project: Project) -> dict[str, Any]:
    result = cli(project, "step")
    assert result.returncode == 0, result.stderr
    return project.meta(project.run_state()["next_iter"] - 1)


def test_validate_and_status_say_the_agent_is_sandboxed(project: Project) -> None:
    sandboxed(project, "true")

    # A `command` agent reaches no host of its own: nothing is listed.
    for command in ("validate", "status"):
        line = next(
            line
            for line in cli(project, command).stdout.splitlines()
            if line.startswith(f"{command}: sandbox=")
        )
        assert line.startswith(f"{command}: sandbox=bwrap userns=yes caps=none "), line
        assert " net=proxy(0 hosts) " in line, line


def test_the_run_repository_is_not_reachable_from_the_sandbox(project: Project) -> None:
    script = (
        f'root="{project.root}"; '
        f'{{ ls -A "$root"; echo "--"; cat "$root/.git/config" "$root/.git/HEAD"; '
        f'touch "$root/PWNED" "$root/.git/PWNED"; echo "rc=$?"; git log --oneline -1; }} '
        f'> "$RUNNER_AGENT_DIR/seen" 2>&1; echo work > work.txt'
    )
    sandboxed(project, script)

    record = step(project)

    seen = (project.iter_dir(record["iter"]) / "agent" / "seen").read_text()
    listing, rest = seen.split("--", 1)
    assert "README.md" not in listing.split(), seen  # the run's files are not there
    assert "[core]" not in rest and "ref: refs/heads" not in rest, seen
    assert "rc=1" in rest, seen
    assert "chore(runner)" in rest or "chore(loop)" in rest or "test setup" in rest, seen
    assert not (project.root / "PWNED").exists()
    assert not (project.root / ".git" / "PWNED").exists()
    assert (project.root / "work.txt").read_text() == "work\n"  # imported as a file


def test_nothing_the_agent_started_outlives_its_session(project: Project) -> None:
    marker = f"runner-sandbox-daemon-{os.getpid()}"
    script = (
        # python3, not `exec -a`: the sh of Debian (dash) has no `-a`, and nothing would start.
        f"setsid python3 -c 'import time; time.sleep(300)' {marker} </dev/null >/dev/null 2>&1 & "
        f"(python3 -c 'import time; time.sleep(300)' {marker} &) ; sleep 0.5; "
        'pgrep -c -x python3 > "$RUNNER_AGENT_DIR/started"'
    )
    sandboxed(project, script)

    record = step(project)

    assert (project.iter_dir(record["iter"]) / "agent" / "started").read_text().strip() == "2"

    time.sleep(0.5)
    alive = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert alive == []


def test_the_agent_cannot_see_or_signal_the_runner(project: Project) -> None:
    script = (
        'pgrep -f "runner_shel[l] step" > "$RUNNER_AGENT_DIR/seen" || true; '
        "pkill -STOP -f 'runner_shel[l] step' || true"
    )
    sandboxed(project, script)

    record = step(project)  # the step ends: its runner was never stopped

    assert (project.iter_dir(record["iter"]) / "agent" / "seen").read_text() == ""


def test_the_guard_has_no_network_by_default(project: Project, tmp_path: Path) -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    probe_script = tmp_path / "net.py"
    probe_script.write_text(
        "import socket, sys\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "except OSError:\n    sys.exit(1)\n",
        encoding="utf-8",
    )
    project.prepare(
        TWO_LEAVES,
        agent_command=["sh", "-c", WRITE_DONE],
        guard_command=["python3", str(probe_script)],
        sandbox={"mode": "bwrap"},
    )
    try:
        record = step(project)
    finally:
        listener.close()

    assert record["guard"] == "fail"


def test_the_agent_and_guard_see_the_checkout_and_their_files_at_fixed_paths(
    project: Project,
) -> None:
    # What the agent is told (its prompt on stdin, its environment) names paths it can use,
    # none of them the slot's host path under `.git/runner/slots/`.
    script = (
        'prompt=$(cat); { echo "pwd=$(pwd) PWD=$PWD"; echo "out=$RUNNER_OUTPUT_PATH"; '
        'echo "dir=$RUNNER_AGENT_DIR home=$HOME"; '
        'case "$prompt" in *"/iteration/agent_output.json"*) echo "prompt names it";; esac; '
        'env | grep -c "runner/slots" || true; } > "$RUNNER_AGENT_DIR/seen"; echo work > work.txt'
    )
    guard = [
        "sh",
        "-c",
        'test "$(pwd)" = /checkout && test -f /checkout/work.txt && '
        'test "$(dirname "$RUNNER_GUARD_REPORT")" = /iteration',
    ]
    sandboxed(project, script, guard_command=guard)

    record = step(project)

    seen = (project.iter_dir(record["iter"]) / "agent" / "seen").read_text()
    assert seen.splitlines() == [
        "pwd=/checkout PWD=/checkout",
        "out=/iteration/agent_output.json",
        "dir=/iteration home=/sandbox-home",
        "prompt names it",
        "0",
    ], seen
    assert record["guard"] == "pass", record


def test_a_read_only_path_where_the_sandbox_shows_the_checkout_is_refused_before_the_step(
    project: Project,
) -> None:
    sandboxed(
        project, "echo work > work.txt", sandbox={"mode": "bwrap", "read_only": ["/checkout/x"]}
    )

    result = cli(project, "step")

    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "runner: sandbox: [sandbox] read_only entry /checkout/x lies under /checkout, where the "
        'sandbox shows its own: move it elsewhere, or set [sandbox] mode = "off" in '
        ".runner/state/config.toml"
    )
    assert not project.iter_dir(1).exists()
