"""End-to-end specification of crash safety: one runner at a time, and `runner recover`.

A second step/loop/start/recover/init fails at once naming the lock holder's pid and command; a
lock left by a dead runner is taken over; read-only commands never wait for it. A runner killed
(SIGKILL) at any phase of an iteration leaves valid state files; the next step, loop and
validate report the interrupted iteration; `runner recover` kills its orphaned processes, keeps
the agent's file changes in a commit, restores the tree and run state of the last good
iteration and logs it as the runner error `interrupted`; then `runner loop` finishes the tree
without a single attempt consumed.

Kills at an exact phase use the test-only hook RUNNER_TEST_CRASH_AT (lock_and_journal.crash_point).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.crash import (
    CRASH_POINTS,
    assert_state_valid,
    attempts,
    cli,
    git_subjects,
    journal_file,
    one_error_line,
    read_journal,
    spawn,
    wait_for_processes,
)
from tests.helpers.e2e import PYTHON, Project, node, process_alive

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
DONE = {"status": "done", "summary": "did it"}
SLEEPING_AGENT = {"sleep": 30, "output": DONE}


def subject(run: str, iteration: int, node_id: str, status: str, guard: str) -> str:
    return f"chore(loop): run {run} iter {iteration} node {node_id} status={status} guard={guard}"


@pytest.fixture
def busy(project: Project) -> Iterator[tuple[Project, subprocess.Popen[str]]]:
    """A `runner step` holding the lock while its agent sleeps; killed and recovered after."""
    project.prepare(TWO_LEAVES)
    project.agent_script({1: SLEEPING_AGENT})
    holder = spawn(project, "step")
    wait_for_processes(project, 1)
    yield project, holder
    holder.kill()
    holder.wait()
    assert cli(project, "recover").returncode == 0


# ---------------------------------------------------------------- the lock


@pytest.mark.parametrize(
    "command", [["step"], ["loop"], ["start"], ["recover"], ["init", "--force"]]
)
def test_a_second_runner_fails_at_once_naming_the_lock_holder(
    busy: tuple[Project, subprocess.Popen[str]], command: list[str]
) -> None:
    project, holder = busy
    before = project.snapshot()

    message = one_error_line(cli(project, *command, timeout=20))

    assert f"pid {holder.pid}: runner step" in message
    assert message.startswith("another runner holds the lock on this repository")
    assert project.snapshot() == before


@pytest.mark.parametrize(
    ("command", "first_line"),
    [(["validate"], "validate: layout=ok"), (["select"], "select: status=open id=root.1")],
)
def test_read_only_commands_do_not_wait_for_a_running_step(
    busy: tuple[Project, subprocess.Popen[str]], command: list[str], first_line: str
) -> None:
    project, _ = busy

    result = cli(project, *command, timeout=20)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(first_line)


def test_validate_does_not_call_a_running_iteration_interrupted(
    busy: tuple[Project, subprocess.Popen[str]],
) -> None:
    project, _ = busy

    result = cli(project, "validate", timeout=20)

    assert result.stdout.splitlines()[-2:] == [
        f"validate: run=ok id={project.run_id} branch=runner/{project.run_id}",
        "validate: sandbox=off userns=no caps=host seccomp=no fs=host env=listed net=host"
        " limits=none",
    ]


def test_a_lock_file_left_by_a_dead_runner_is_taken_over(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"output": DONE}})
    (project.root / ".git" / "runner.lock").write_text("pid 999999999: runner loop\n")

    result = cli(project, "step")

    assert result.returncode == 0, result.stderr
    assert project.run_state()["next_iter"] == 2


def test_the_lock_of_a_killed_runner_is_free_although_its_agent_lives_on(
    project: Project,
) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: SLEEPING_AGENT})
    holder = spawn(project, "step")
    agent_group = wait_for_processes(project, 1).process_groups[0]
    holder.kill()
    holder.wait()
    assert process_alive(agent_group)

    message = one_error_line(cli(project, "step"))

    assert message.startswith("iteration 1 of run")
    assert message.endswith("run 'runner recover' to record it and continue")
    assert cli(project, "recover").returncode == 0
    assert not process_alive(agent_group)


# ---------------------------------------------------------------- a kill at every phase


def crash_at(project: Project, phase: str) -> subprocess.CompletedProcess[str]:
    """Iteration 1 works on root.1, leaves a file and claims done; the runner dies at `phase`."""
    project.prepare(TWO_LEAVES)
    first: dict[str, Any] = {"files": {"work.txt": "the agent's work\n"}, "output": DONE}
    if phase == "during-agent":
        first["sleep"] = 30
    project.agent_script({1: first, 2: {"output": DONE}, 3: {"output": DONE}})
    project.guard_script([{"sleep": 30}, {}] if phase == "during-guard" else [{}])
    return cli(project, "step", env={"RUNNER_TEST_CRASH_AT": CRASH_POINTS[phase]})


@pytest.mark.parametrize("phase", list(CRASH_POINTS))
def test_a_kill_leaves_valid_state_files_and_a_journal(project: Project, phase: str) -> None:
    killed = crash_at(project, phase)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert_state_valid(project)
    assert read_journal(project) is not None


@pytest.mark.parametrize("command", ["step", "loop", "validate"])
def test_the_next_command_reports_the_interrupted_iteration(project: Project, command: str) -> None:
    crash_at(project, "during-agent")

    message = one_error_line(cli(project, command))

    assert message == (
        f"iteration 1 of run {project.run_id} (node 'root.1') was interrupted while running; "
        "run 'runner recover' to record it and continue"
    )


@pytest.mark.parametrize("phase", [p for p in CRASH_POINTS if p != "after-commit"])
def test_recover_logs_the_interrupted_iteration_as_a_runner_error(
    project: Project, phase: str
) -> None:
    crash_at(project, phase)
    journal = read_journal(project)
    assert journal is not None

    result = cli(project, "recover")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"recover: status=interrupted run={project.run_id} iter=1 node=root.1 "
    )
    assert not journal_file(project).exists()
    assert project.status() == ""
    assert git_subjects(project)[-1] == subject(
        project.run_id, 1, "root.1", "interrupted", "skipped"
    )
    assert project.run_state()["next_iter"] == 2
    assert project.run_state()["last_summary"] == ""
    meta = project.meta(1)
    assert (meta["status"], meta["guard"], meta["error_kind"]) == ("retry", "skipped", "runner")
    assert (
        (project.iter_dir(1) / "runner_error.log")
        .read_text()
        .startswith(
            f"runner error: interrupted: the runner (pid {journal.runner_pid}, 'runner step') "
            f"stopped during iteration 1"
        )
    )
    assert set(attempts(assert_state_valid(project)).values()) == {0}


@pytest.mark.parametrize("phase", ["during-guard", "while-writing", "before-commit"])
def test_recover_keeps_the_agents_file_changes_on_its_attempt_ref(
    project: Project, phase: str
) -> None:
    # An interrupted iteration was judged no pass: the run branch gets its state, its attempt
    # ref its files, which the node's next attempt starts from.
    crash_at(project, phase)

    assert cli(project, "recover").returncode == 0

    ref = f"refs/runner/attempts/{project.run_id}/1"
    assert project.git("show", f"{ref}:work.txt") == "the agent's work\n"
    assert "work.txt" not in project.git("ls-tree", "--name-only", "HEAD").split()
    assert project.git("rev-parse", f"{ref}^").strip() == project.git("rev-parse", "HEAD^").strip()


@pytest.mark.parametrize("phase", ["during-agent", "during-guard"])
def test_recover_terminates_the_orphaned_process_group(project: Project, phase: str) -> None:
    crash_at(project, phase)
    journal = read_journal(project)
    assert journal is not None
    orphan = journal.process_groups[-1]
    assert process_alive(orphan)

    result = cli(project, "recover")

    assert f"killed_process_groups={orphan}" in result.stdout
    assert not process_alive(orphan)


def test_recover_after_the_commit_only_clears_the_journal(project: Project) -> None:
    crash_at(project, "after-commit")
    head = project.head()

    result = cli(project, "recover")

    assert result.stdout.startswith("recover: status=already-committed ")
    assert project.head() == head
    assert not journal_file(project).exists()
    assert git_subjects(project)[-1] == subject(project.run_id, 1, "root.1", "done", "pass")


def test_recover_after_the_commit_ends_even_when_the_logs_are_gone(project: Project) -> None:
    crash_at(project, "after-commit")
    shutil.rmtree(project.iter_dir(1))

    result = cli(project, "recover")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("recover: status=already-committed ")
    assert "no iteration files to archive; iteration 1's logs are not archived" in result.stderr
    assert not journal_file(project).exists()
    assert cli(project, "step").returncode == 0


@pytest.mark.parametrize("phase", list(CRASH_POINTS))
def test_after_recover_the_loop_finishes_the_tree_without_consuming_an_attempt(
    project: Project, phase: str
) -> None:
    crash_at(project, phase)
    assert cli(project, "recover").returncode == 0

    result = cli(project, "loop")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("loop: status=complete")
    tree = assert_state_valid(project)
    assert tree.passes
    assert set(attempts(tree).values()) == {0}
    assert project.status() == ""


def test_recover_removes_the_git_locks_a_killed_commit_left(project: Project) -> None:
    crash_at(project, "before-commit")
    branch_lock = project.root / ".git" / "refs" / "heads" / "runner" / f"{project.run_id}.lock"
    for lock in (project.root / ".git" / "index.lock", branch_lock):
        lock.write_text("")

    result = cli(project, "recover")

    assert result.returncode == 0, result.stderr
    assert not branch_lock.exists()
    assert git_subjects(project)[-1] == subject(
        project.run_id, 1, "root.1", "interrupted", "skipped"
    )


def test_recover_removes_temp_files_a_killed_atomic_write_left(project: Project) -> None:
    crash_at(project, "while-writing")
    leftover = project.root / ".runner" / "state" / ".tree.json.k1ll3d.tmp"
    leftover.write_text("{")

    assert cli(project, "recover").returncode == 0

    assert not leftover.exists()
    assert ".tree.json.k1ll3d.tmp" not in project.git("ls-files", ".runner")


def test_recover_restores_the_committed_bytes_of_a_crlf_config(project: Project) -> None:
    project.set_config()
    crlf = project.config_path.read_bytes().replace(b"\n", b"\r\n")
    project.config_path.write_bytes(crlf)
    crash_at(project, "before-commit")

    assert cli(project, "recover").returncode == 0

    assert project.config_path.read_bytes() == crlf
    assert project.status() == ""


def test_recover_refuses_while_git_is_in_the_middle_of_a_merge(project: Project) -> None:
    crash_at(project, "before-agent")
    (project.root / ".git" / "MERGE_HEAD").write_text(project.head() + "\n")

    message = one_error_line(cli(project, "recover"))

    assert message == (
        "git is in the middle of a merge; finish or abort it, then run 'runner recover'"
    )
    assert journal_file(project).exists()


def test_recover_with_nothing_to_recover_changes_nothing(project: Project) -> None:
    before = project.snapshot()
    head = project.head()

    result = cli(project, "recover")

    assert (result.returncode, result.stdout) == (0, "recover: status=clean\n")
    assert project.snapshot() == before
    assert project.head() == head


def test_a_damaged_journal_is_recovered_from_the_last_commit(project: Project) -> None:
    crash_at(project, "while-writing")
    journal_file(project).write_bytes(b"\xff{ not a journal")
    assert one_error_line(cli(project, "step")).endswith(
        "run 'runner recover' to record the iteration it describes as interrupted, "
        "or delete it if no iteration was running"
    )

    result = cli(project, "recover")

    assert result.stdout.startswith(
        f"recover: status=interrupted run={project.run_id} iter=1 node=root.1 "
    )
    assert git_subjects(project)[-1] == subject(
        project.run_id, 1, "root.1", "interrupted", "skipped"
    )
    assert set(attempts(assert_state_valid(project)).values()) == {0}
    assert project.status() == ""
    assert not journal_file(project).exists()


def test_a_damaged_journal_of_an_iteration_that_never_started_is_removed(
    project: Project,
) -> None:
    project.prepare(TWO_LEAVES)
    journal_file(project).write_text('{"phase": "running"}')
    head = project.head()

    result = cli(project, "recover")

    assert (result.returncode, result.stdout) == (0, "recover: status=clean\n")
    assert not journal_file(project).exists()
    assert project.head() == head


DETACHING_AGENT = """
import os, pathlib, subprocess, sys, time
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
)
# Written whole, then renamed: the test reads the file as soon as it exists.
harness = pathlib.Path(os.environ["RUNNER_TEST_HARNESS"])
(harness / "daemon.pid.tmp").write_text(str(daemon.pid))
os.replace(harness / "daemon.pid.tmp", harness / "daemon.pid")
time.sleep(60)
"""


def test_recover_terminates_a_daemon_the_agent_detached_from_its_group(
    project: Project,
) -> None:
    project.prepare(TWO_LEAVES, agent_command=[PYTHON, "-c", DETACHING_AGENT])
    holder = spawn(project, "step")
    agent_group = wait_for_processes(project, 1).process_groups[0]
    pid_file = project.harness / "daemon.pid"
    while not pid_file.exists():
        assert holder.poll() is None
        time.sleep(0.01)
    daemon = int(pid_file.read_text())
    holder.kill()
    holder.wait()
    try:
        assert os.getpgid(daemon) != agent_group

        result = cli(project, "recover")

        assert result.returncode == 0, result.stderr
        assert not process_alive(agent_group)
        assert not process_alive(daemon)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
