"""The agent is untrusted: each hostile thing an agent did, done by a scripted agent.

Threat model: everything in the work tree and `.git/` may have been changed by the agent between
the runner's own actions. Each test has the agent (`sh -c <script>`, then a `done` output) do
one hostile thing, and checks that the runner neither writes outside the repository, hangs,
signals an unrelated process, nor lets the agent decide what the runner owns; a refusal is one
line naming the file.
"""

from __future__ import annotations

import errno
import json
import os
import select
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from runner_core.iteration.effects import PrepareIterationDir
from runner_core.loop.events import EventOrigin, loop_started, operator
from runner_shell.git.hardened import GitTimeout, run_git
from runner_shell.git.repo import Repo
from runner_shell.step.iteration_store import DiskRecords
from runner_shell.store.event_log import append_events
from runner_shell.store.files import PendingFile, UnsafePath, rename_within
from runner_shell.store.layout import RunnerPaths
from tests.helpers.crash import cli, journal_file, one_error_line, spawn, wait_for_processes
from tests.helpers.e2e import Project, node, process_alive
from tests.helpers.serve import free_port, serve_process, wait_until_answering

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
DONE = {"status": "done", "summary": "did it"}
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'


# The agent works in its scratch checkout; until a sandbox hides it, the run's own checkout is
# still reachable through the absolute paths the agent is given, and these attacks go there.
RUN_ROOT = '"$RUNNER_ITER_DIR/../../../.."'


def hostile(project: Project, script: str, tree: Any = TWO_LEAVES, **config: Any) -> None:
    """The agent runs `script` in the repository root, then claims done."""
    project.prepare(tree, agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"], **config)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A sentinel directory outside the repository with one file in it."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "precious.txt").write_text("keep me\n", encoding="utf-8")
    return directory


def untouched(outside: Path) -> bool:
    entries = sorted(path.name for path in outside.iterdir())
    return entries == ["precious.txt"] and (outside / "precious.txt").read_text() == "keep me\n"


# ---------------------------------------------------------------- finding 1: lock symlink


def test_a_lock_symlinked_by_the_agent_never_truncates_its_target(
    project: Project, outside: Path
) -> None:
    hostile(project, f"ln -sf {outside / 'precious.txt'} {RUN_ROOT}/.git/runner.lock")
    assert cli(project, "step").returncode == 0

    message = one_error_line(cli(project, "step"))

    assert "runner.lock is a symlink" in message
    assert untouched(outside)


def test_a_journal_symlinked_by_the_agent_is_damage_not_a_target(
    project: Project, outside: Path
) -> None:
    hostile(project, f"ln -sf {outside / 'precious.txt'} .git/runner-journal.json")
    cli(project, "step")

    result = cli(project, "recover")

    assert "Traceback" not in result.stderr
    assert untouched(outside)


# ---------------------------------------------------------------- finding 13: worktrees


def test_two_worktrees_on_one_run_branch_share_one_lock(project: Project, tmp_path: Path) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    branch = project.git("symbolic-ref", "--short", "HEAD").strip()
    other = tmp_path / "second-worktree"
    project.git("worktree", "add", "-f", str(other), branch)
    holder = spawn(project, "step")
    try:
        wait_for_processes(project, 1)

        message = one_error_line(cli(project, "step", cwd=other))

        assert "another runner holds the lock" in message
    finally:
        holder.kill()
        holder.wait()
        cli(project, "recover")


# ---------------------------------------------------------------- finding 2: recover's signals


def test_recover_never_signals_a_group_the_iteration_does_not_own(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    holder = spawn(project, "step")
    agent_group = wait_for_processes(project, 1).process_groups[0]
    holder.kill()
    holder.wait()
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        journal = json.loads(journal_file(project).read_text(encoding="utf-8"))
        journal["process_groups"] = [bystander.pid, agent_group]  # a reused group id
        journal_file(project).write_text(json.dumps(journal), encoding="utf-8")

        result = cli(project, "recover")

        assert result.returncode == 0, result.stderr
        assert f"killed_process_groups={agent_group}" in result.stdout
        assert bystander.poll() is None
        assert not process_alive(agent_group)
    finally:
        bystander.kill()
        bystander.wait()


# ---------------------------------------------------------------- finding 4: max_attempts


def test_an_agent_raising_max_attempts_is_still_stuck_after_the_runners(project: Project) -> None:
    tree = node("root", next_="decompose", children=[node("root.1", max_attempts=2)])
    project.prepare(tree)
    raise_it = {"tree_ops": [["set", "root.1", "max_attempts", 99]], "output": DONE}
    project.agent_script({n: raise_it for n in range(1, 6)})
    project.guard_script([{"exit": 1}])

    results = [cli(project, "step") for _ in range(3)]

    assert [result.returncode for result in results] == [0, 0, 3], results[-1].stderr
    leaf = project.tree()["children"][0]
    assert (leaf["attempts"], leaf["max_attempts"]) == (2, 2)


# ---------------------------------------------------------------- finding 5: FIFOs, hooks, filters


@pytest.mark.parametrize("name", ["config.toml", "tree.json"])
def test_a_state_file_replaced_by_a_fifo_never_blocks_the_step(project: Project, name: str) -> None:
    hostile(project, f"rm .runner/state/{name} && mkfifo .runner/state/{name}")

    result = cli(project, "step", timeout=30)

    assert "Traceback" not in result.stderr
    assert not (project.root / ".runner/state" / name).is_fifo()
    assert cli(project, "status", timeout=30).returncode == 0


def test_status_refuses_a_fifo_in_one_line(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.tree_path.unlink()
    os.mkfifo(project.tree_path)

    message = one_error_line(cli(project, "status", timeout=30))

    assert ".runner/state/tree.json is a FIFO, not a regular file" in message


def test_a_sleeping_post_commit_hook_is_never_run(project: Project) -> None:
    hook = ".git/hooks/post-commit"
    hostile(
        project,
        f"mkdir -p .git/hooks && printf '#!/bin/sh\\nsleep 60\\n' > {hook}; chmod +x {hook}",
    )

    started = time.monotonic()
    result = cli(project, "step", timeout=40)

    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30


def test_a_sleeping_clean_filter_is_never_run(project: Project) -> None:
    hostile(
        project,
        "printf '* filter=slow\\n' > .gitattributes\n"
        "git config filter.slow.clean 'sleep 60; cat'\n"
        "git config filter.slow.required true\n"
        "echo work > work.txt",
    )

    started = time.monotonic()
    result = cli(project, "step", timeout=40)
    assert result.returncode == 0, result.stderr
    assert project.git("show", "HEAD:work.txt") == "work\n"
    # `git status` re-reads (and would clean) a file whose stat changed: the next step's too.
    os.utime(project.root / "work.txt", (1, 1))
    result = cli(project, "step", timeout=40)

    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 40


def test_a_git_command_past_its_deadline_is_killed_and_reported(project: Project) -> None:
    started = time.monotonic()
    with pytest.raises(GitTimeout, match=r"timed out after 0\.5 s"):
        run_git(["-c", "alias.slow=!sleep 30", "slow"], project.root, timeout=0.5)
    assert time.monotonic() - started < 10


# ---------------------------------------------------------------- finding 6 and 14: iteration dirs


def test_an_unexpected_entry_in_the_run_directory_is_skipped(project: Project) -> None:
    hostile(
        project, 'mkdir "$(dirname "$RUNNER_ITER_DIR")/²"; touch "$(dirname "$RUNNER_ITER_DIR")/x"'
    )
    assert cli(project, "step").returncode == 0

    for command in ("step", "status", "history"):
        result = cli(project, command)
        assert result.returncode in (0, 2), (command, result.stderr)
        assert "internal error" not in result.stderr
    assert "not an iteration directory; skipped" in cli(project, "history").stderr


def test_a_dangling_symlink_at_the_next_iteration_does_not_wedge_the_run(
    project: Project,
) -> None:
    hostile(project, 'ln -s /nonexistent/place "$(dirname "$RUNNER_ITER_DIR")/2"')
    assert cli(project, "step").returncode == 0

    result = cli(project, "step")

    assert result.returncode in (0, 2), result.stderr
    assert (project.iter_dir(2) / "meta.json").is_file()
    assert not project.iter_dir(2).is_symlink()


# ---------------------------------------------------------------- finding 9: symlinked directories


@pytest.mark.parametrize(
    "target",
    ['"$RUNNER_ITER_DIR"', '"$(dirname "$RUNNER_ITER_DIR")"', ".runner/context"],
    ids=["iteration-dir", "run-dir", "context-dir"],
)
def test_the_runner_never_writes_through_a_directory_the_agent_made_a_symlink(
    project: Project, outside: Path, target: str
) -> None:
    # The agent's output goes where it always does, before the directory is swapped.
    script = f"{WRITE_DONE}\nrm -rf {target} && ln -s {outside} {target}\nexit 0\n#"
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", script])

    results = [cli(project, "step") for _ in range(2)]

    assert all("Traceback" not in result.stderr for result in results)
    assert untouched(outside), sorted(path.name for path in outside.iterdir())


def test_a_rename_in_an_iteration_directory_made_a_symlink_never_renames_outside(
    project: Project, outside: Path
) -> None:
    # guard.log is moved into place by a rename: the directory is reached as every write's is.
    iter_dir = project.root / ".runner" / "iterations" / "run-x" / "1"
    iter_dir.parent.mkdir(parents=True)
    iter_dir.symlink_to(outside)
    (outside / ".guard.log.pending").write_text("planted\n", encoding="utf-8")

    with pytest.raises(UnsafePath):
        rename_within(iter_dir, ".guard.log.pending", "guard.log")

    assert sorted(path.name for path in outside.iterdir()) == [".guard.log.pending", "precious.txt"]


# ---------------------------------------------------------------- events.jsonl

RUN_DIR = '"$(dirname "$RUNNER_ITER_DIR")"'
EVENTS = f"{RUN_DIR}/events.jsonl"
NOT_WRITTEN = "the runner never writes through it (remove it)"
NOT_READ = "not a regular file; the runner does not read it (remove it)"


@pytest.mark.parametrize(
    ("link", "kind"), [("ln -s", "a symlink"), ("ln", "a hard link (2 names)")], ids=["sym", "hard"]
)
def test_an_events_log_linked_by_the_agent_is_never_appended_through(
    project: Project, outside: Path, link: str, kind: str
) -> None:
    plant = f"rm -f {EVENTS}; {link} {outside / 'precious.txt'} {EVENTS}"
    hostile(project, f'if [ "$(basename "$RUNNER_ITER_DIR")" = 1 ]; then {plant}; fi')
    events = project.iter_dir(1).parent / "events.jsonl"

    message = one_error_line(cli(project, "step", timeout=30))

    assert message == f"{events} is {kind}; {NOT_WRITTEN}"
    assert untouched(outside)
    assert project.meta(1)["status"] == "done"  # the iteration was committed all the same
    assert "iter 1" in project.subjects()[-1]
    # The next step refuses before any agent runs; once removed, the run goes on.
    assert one_error_line(cli(project, "step", timeout=30)) == message
    assert not project.iter_dir(2).exists()
    events.unlink()
    assert cli(project, "step", timeout=30).returncode == 0
    assert project.meta(2)["status"] == "done"
    assert untouched(outside)


# One slot: the loop stops right after the iteration whose agent replaced the log. With several
# slots root.2's job already runs beside it and merges before the loop ends (docs/parallel.md).
@pytest.mark.one_slot
@pytest.mark.parametrize(
    ("plant", "kind"), [("mkfifo", "a FIFO"), ("mkdir", "a directory")], ids=["fifo", "directory"]
)
def test_an_events_log_the_agent_replaced_ends_the_loop_in_one_line(
    project: Project, plant: str, kind: str
) -> None:
    hostile(project, f"rm -f {EVENTS}; {plant} {EVENTS}")
    events = project.iter_dir(1).parent / "events.jsonl"

    started = time.monotonic()
    result = cli(project, "loop", timeout=30)

    assert time.monotonic() - started < 30
    assert result.stderr == f"runner: {events} is {kind}; {NOT_WRITTEN}\n", result.stderr
    assert result.returncode == 1
    assert "iter 1" in project.subjects()[-1]
    assert not project.iter_dir(2).exists()


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_follow_refuses_a_planted_events_log_in_one_line(
    project: Project, outside: Path, plant: str
) -> None:
    project.prepare(TWO_LEAVES)
    events = project.iter_dir(1).parent / "events.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    if plant == "symlink":
        events.symlink_to(outside / "precious.txt")
    else:
        os.mkfifo(events)

    message = one_error_line(cli(project, "follow", timeout=20))

    kind = "a symlink" if plant == "symlink" else "a FIFO"
    assert message == f"{events} is {kind}, {NOT_READ}"


@pytest.mark.parametrize("plant", ["fifo", "symlink"])
def test_follow_ends_when_the_lock_file_was_replaced_never_reading_it(
    project: Project, outside: Path, plant: str
) -> None:
    run = project.prepare(TWO_LEAVES)
    events = project.iter_dir(1).parent / "events.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    origin = EventOrigin(run, 1, None, "2026-01-01T00:00:00Z")
    # A loop began and no event ends it: follow asks whether a runner holds the lock.
    append_events(events, [loop_started(origin), operator(origin, "tell", "hi")])
    lock = Repo(project.root).common_path("runner.lock")
    lock.unlink(missing_ok=True)
    if plant == "fifo":
        os.mkfifo(lock)  # reading it would wait for a writer forever
    else:
        lock.symlink_to(outside / "precious.txt")

    result = cli(project, "follow", timeout=20)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"loop: start run={run} iter=1\noperator: tell hi\n"


@pytest.mark.parametrize("plant", ["mkfifo", "ln -s /etc/hostname"])
def test_diff_reads_a_replaced_snapshot_from_the_archive_never_through_it(
    project: Project, plant: str
) -> None:
    project.prepare(TWO_LEAVES)
    first = '"$RUNNER_ITER_DIR/../1/tree.after.json"'
    # The second iteration's agent replaces the first iteration's snapshot, once the first
    # iteration is committed: with several slots the two run at once.
    wait = f"for _ in $(seq 300); do [ -e {first} ] && break; sleep 0.1; done"
    second = '[ "$(basename "$RUNNER_ITER_DIR")" = 2 ]'
    hostile(project, f"if {second}; then {wait}; rm -f {first}; {plant} {first}; fi")
    assert cli(project, "loop", timeout=60).returncode == 0

    result = cli(project, "diff", "1", "--json", timeout=20)

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["source"].startswith("refs/runner/logs/")
    changed = [(c["node"], f["field"]) for c in document["changes"] for f in c.get("fields", [])]
    assert ("root.1", "passes") in changed


@pytest.mark.parametrize(
    "tamper",
    [
        "rm -f {first}; printf '%s' '{{\"tampered\": true}}' > {first}",
        "chmod u+w {first}; printf ' ' >> {first}",
        "cp {first} {outside}/copy.json; rm -f {first}; ln -s {outside}/copy.json {first}",
    ],
    ids=["replaced", "rewritten-in-place", "symlink-to-the-same-bytes"],
)
def test_a_snapshot_the_agent_changed_is_never_linked_into_the_next_iteration(
    project: Project, outside: Path, tamper: str
) -> None:
    project.prepare(TWO_LEAVES)
    first = f".runner/iterations/{project.run_id}/1/tree.after.json"
    # The second iteration's agent changes the first iteration's after snapshot, which the
    # runner would link as the second's before snapshot.
    script = tamper.format(first=first, outside=outside)
    hostile(project, f"if [ -e {first} ] || [ -L {first} ]; then {script}; fi")
    assert cli(project, "loop", timeout=60).returncode == 0

    archive = f"refs/runner/logs/{project.run_id}"
    committed = project.git("show", f"{archive}:0-99/1/tree.after.json")
    before_2 = project.iter_dir(2) / "tree.before.json"
    assert project.git("show", f"{archive}:0-99/2/tree.before.json") == committed
    assert not before_2.is_symlink() and before_2.read_text(encoding="utf-8") == committed
    assert not (outside / "copy.json").exists() or (outside / "copy.json").stat().st_nlink == 1


def test_an_output_file_symlinked_elsewhere_is_never_read_as_the_agent_s_output(
    project: Project, outside: Path
) -> None:
    claimed = outside / "claimed.json"
    claimed.write_text('{"status": "done", "summary": "read from outside"}', encoding="utf-8")
    script = f'ln -s {claimed} "$RUNNER_OUTPUT_PATH"'
    project.prepare(node("root"), agent_command=["sh", "-c", script])

    cli(project, "step", timeout=60)

    meta = project.meta(1)
    assert meta["status"] == "retry"
    assert "is not a regular file" in meta["error"], meta["error"]
    assert "read from outside" not in project.git("log", "-p")


def test_serve_stops_forwarding_a_planted_events_log_and_keeps_answering(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    events = project.iter_dir(1).parent / "events.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(events)
    refusal = f"runner: live events stopped: {events} is a FIFO, {NOT_READ}\n"
    port = free_port()
    process = serve_process(project, "--port", str(port))
    said = ""
    try:
        wait_until_answering(process, f"http://127.0.0.1:{port}")
        said += stderr_until(process, refusal, deadline=time.monotonic() + 20)
        assert httpx.get(f"http://127.0.0.1:{port}/api/overview", timeout=10).status_code == 200
    finally:
        process.terminate()
        said += process.communicate(timeout=10)[1]

    assert refusal in said.splitlines(keepends=True), said
    assert "Traceback" not in said


def stderr_until(process: subprocess.Popen[str], wanted: str, deadline: float) -> str:
    """What the process writes to stderr up to `wanted`, or to the deadline (read unbuffered:
    a line already read ahead is never waited for)."""
    assert process.stderr is not None
    said = b""
    while wanted.encode() not in said:
        wait = max(0.0, deadline - time.monotonic())
        if not select.select([process.stderr], [], [], wait)[0]:
            break
        piece = os.read(process.stderr.fileno(), 4096)
        if not piece:
            break
        said += piece
    return said.decode(errors="replace")


def test_status_never_blocks_on_a_running_log_the_agent_made_a_fifo(project: Project) -> None:
    log = '"$RUNNER_ITER_DIR/executor.log"'
    # Once the runner has opened its live log (a FIFO there before it would be refused and end
    # the session at once, before status could look).
    wait = f"while [ ! -f {log} ]; do sleep 0.05; done"
    hostile(project, f"{wait}; rm -f {log}; mkfifo {log}; sleep 5")
    step = spawn(project, "step")
    try:
        fifo = project.iter_dir(1) / "executor.log"
        deadline = time.monotonic() + 20
        while not fifo.is_fifo():
            assert time.monotonic() < deadline, "the agent made no FIFO"
            time.sleep(0.05)

        status = cli(project, "status", timeout=20)
    finally:
        stepped = step.communicate(timeout=60)

    assert status.returncode == 0, status.stderr
    assert "running: iter=1 node=root.1" in status.stdout
    assert "Traceback" not in stepped[1], stepped


# ---------------------------------------------------------------- finding 10: size caps


def test_a_huge_sparse_meta_json_is_skipped_unread(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"output": DONE}})
    assert cli(project, "step").returncode == 0
    meta = project.iter_dir(1) / "meta.json"
    meta.chmod(0o644)
    os.truncate(meta, 3 * 1024**3)

    result = cli(project, "history", timeout=30)

    assert "Traceback" not in result.stderr
    assert "meta.json" in result.stderr


# ---------------------------------------------------------------- finding 11: config bounds


def test_validate_refuses_a_timeout_of_four_hundred_digits(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    config = project.config_path.read_text(encoding="utf-8")
    huge = "1" + "0" * 400
    project.config_path.write_text(
        config.replace("iteration_timeout_secs = 30", f"iteration_timeout_secs = {huge}"),
        encoding="utf-8",
    )

    message = one_error_line(cli(project, "validate"))

    assert "iteration_timeout_secs: must be at most 604800" in message


# ---------------------------------------------------------------- finding 7: no goal


@pytest.mark.parametrize("text", ["", "---\nid: x\n---\n\n"], ids=["empty", "frontmatter-only"])
def test_start_refuses_a_goal_md_without_a_goal(unstarted_project: Project, text: str) -> None:
    unstarted_project.goal_path.write_text(text, encoding="utf-8")

    message = one_error_line(cli(unstarted_project, "start"))

    assert ".runner/GOAL.md has no goal: it is empty or only frontmatter" in message


def test_a_goal_emptied_by_the_agent_stops_the_next_step_up_front(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    run_id = project.run_id
    project.agent_script(
        {1: {"files": {str(project.goal_path): f"---\nid: {run_id}\n---\n"}, "output": DONE}}
    )
    assert cli(project, "step").returncode == 0

    for command in ("validate", "step"):
        assert "has no goal" in one_error_line(cli(project, command))
    assert not journal_file(project).exists()


# ---------------------------------------------------------------- finding 3: HEAD moved


def three_iterations_then(project: Project, script: str) -> list[str]:
    """Three passing iterations, then an agent running `script`; the commits before it."""
    tree = node("root", next_="decompose", children=[node(f"root.{n}", order=n) for n in range(5)])
    project.prepare(tree)
    project.agent_script(
        {n: {"files": {f"work{n}.txt": f"{n}\n"}, "output": DONE} for n in (1, 2, 3)}
    )
    for _ in range(3):
        assert cli(project, "step").returncode == 0
    commits = project.git("rev-list", "HEAD").split()
    hostile_script = f"cd {RUN_ROOT}\n{script}\n{WRITE_DONE}"
    project.set_config(agent_command=["sh", "-c", hostile_script])
    project.commit_setup("hostile agent from now on")
    return commits


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("git reset -q --hard HEAD~3", "(a reset or rewrite dropping the run's commits)"),
        ("git checkout -q -b other", "was switched from runner/"),
        ("git checkout -q --detach", "to a detached HEAD at"),
    ],
    ids=["reset-hard", "checkout-b", "detach"],
)
def test_head_moved_outside_the_runner_is_refused_and_charges_no_attempt(
    project: Project, script: str, says: str
) -> None:
    # The run's checkout moved by an unconfined agent is told from the operator's no better
    # than a person's doing: nothing is committed, no attempt is used, the line names the way
    # back, and `runner recover` then records the iteration as interrupted.
    branch = project.git("symbolic-ref", "--short", "HEAD").strip()
    commits = three_iterations_then(project, script)
    before = project.head()

    result = cli(project, "step")

    assert result.returncode == 1, result.stdout
    line = one_error_line(result)
    assert says in line and "outside the runner during iteration 4" in line, line
    assert "nothing was committed and no attempt used" in line
    for fix in (f"git checkout -q {branch}", f"git reset -q --keep {before}"):
        subprocess.run(fix.split(), cwd=project.root, check=True, capture_output=True)
    assert project.head() == before
    assert cli(project, "recover").returncode == 0
    history = project.git("rev-list", "HEAD").split()
    assert set(commits) <= set(history) and before in history
    for n in (1, 2, 3):
        assert project.git("show", f"HEAD:work{n}.txt") == f"{n}\n"
    record = project.meta(4)
    assert record["error_kind"] == "runner", record
    assert project.tree()["children"][3]["attempts"] == 0
    assert project.git("for-each-ref", "refs/runner/rescued/") == ""


# ---------------------------------------------------------------- finding 8: a rewriting daemon

DAEMON = r"""
setsid sh -c '
  journal="$(git rev-parse --git-common-dir)/runner-journal.json"
  for _ in $(seq 1 3000); do
    if grep -q "\"writing\"\|\"committing\"" "$journal" 2>/dev/null; then
      printf "[guard]\ncommand = [\"true\"]\n" > .runner/state/config.toml
      printf "{}" > .runner/state/schema.json
      sed -i "s/^id: .*/id: hijacked/" .runner/GOAL.md
      exit 0
    fi
    sleep 0.001
  done' > /dev/null 2>&1 &
"""


def test_a_daemon_rewriting_runner_files_before_the_commit_changes_nothing(
    project: Project,
) -> None:
    hostile(project, DAEMON)
    files = (".runner/state/config.toml", ".runner/state/schema.json", ".runner/GOAL.md")
    before = {name: project.git("show", f"HEAD:{name}") for name in files}

    assert cli(project, "step").returncode == 0
    time.sleep(0.5)  # the daemon has long done its work

    assert {name: project.git("show", f"HEAD:{name}") for name in files} == before


# ---------------------------------------------------------------- finding 14: a full disk


def test_a_full_disk_names_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "run_state.json"
    pending = PendingFile(target)
    pending.file.close()
    pending.file = open("/dev/full", "wb")  # noqa: SIM115 - every write: ENOSPC, from the kernel
    with pytest.raises(OSError) as raised:
        pending.write(b"x" * 10_000_000)
        pending.commit()
    pending.discard()

    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(target))
    assert list(tmp_path.iterdir()) == []


def test_recover_removes_temp_files_a_failed_write_left(project: Project) -> None:
    project.prepare(TWO_LEAVES)
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    holder = spawn(project, "step")
    wait_for_processes(project, 1)
    holder.kill()
    holder.wait()
    left = [
        project.iter_dir(1) / ".meta.json.0123abcd.tmp",
        project.tree_path.parent / ".tree.json.ff.tmp",
    ]
    for temp in left:
        temp.write_text("half", encoding="utf-8")

    assert cli(project, "recover").returncode == 0

    assert not any(temp.exists() for temp in left)
    assert ".tmp" not in project.git("show", "--stat", "HEAD")


# ---------------------------------------------------------------- review: contained writes


@pytest.mark.parametrize(
    "target", ['"$RUNNER_ITER_DIR"', RUN_DIR], ids=["iteration-dir", "run-dir"]
)
def test_a_planted_git_behind_a_symlinked_directory_never_lets_a_write_out(
    project: Project, outside: Path, target: str
) -> None:
    # A `.git` below the symlink once made its directory pass for the repository's top.
    script = f"{WRITE_DONE}\nrm -rf {target} && mkdir {outside}/.git && ln -s {outside} {target}"
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{script}\nexit 0\n#"])

    results = [cli(project, "step") for _ in range(2)]

    assert all("Traceback" not in result.stderr for result in results)
    assert sorted(path.name for path in outside.iterdir()) == [".git", "precious.txt"]
    assert list((outside / ".git").iterdir()) == []
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "keep me\n"


@pytest.mark.parametrize("link", ["ln -s", "ln"], ids=["sym", "hard"])
def test_a_guard_log_the_agent_planted_is_never_written_through(
    project: Project, outside: Path, link: str
) -> None:
    plant = f'{link} {outside / "precious.txt"} "$RUNNER_ITER_DIR/.guard.log.pending"'
    hostile(project, plant, guard_command=["sh", "-c", "echo clobbered; echo clobbered >&2"])

    message = one_error_line(cli(project, "step"))

    assert message.startswith("runner error: ")
    assert message.endswith(f"{NOT_WRITTEN}: '{project.iter_dir(1) / '.guard.log.pending'}'")
    assert (project.meta(1)["error_kind"], project.meta(1)["guard"]) == ("runner", "skipped")
    assert untouched(outside)


def test_a_timed_out_guard_log_over_a_mebibyte_keeps_every_byte_and_the_note(
    project: Project,
) -> None:
    loud = "head -c 2000000 /dev/zero | tr '\\0' x; echo; sleep 30"
    hostile(
        project,
        "",
        guard_command=["sh", "-c", loud],
        guard_output_limit_bytes=4_000_000,
        iteration_timeout_secs=3,
    )

    cli(project, "step")

    log = (project.iter_dir(1) / "guard.log").read_text(encoding="utf-8")
    assert "x" * 2_000_000 + "\n" in log
    last_two = log.splitlines()[-2:]
    assert last_two[0].endswith("; process group killed]"), log[-200:]
    assert last_two[1].startswith("guard timed out after "), log[-200:]


def test_a_state_file_the_agent_made_a_symlink_is_written_back_not_executable(
    project: Project, outside: Path
) -> None:
    # A symlink's own mode is 0777: the file replacing it was committed 100755.
    hostile(project, f"ln -sf {outside / 'precious.txt'} .runner/state/tree.json")

    cli(project, "step")

    tree = project.root / ".runner" / "state" / "tree.json"
    assert not tree.is_symlink()
    assert stat.S_IMODE(tree.stat().st_mode) & 0o111 == 0
    assert project.git("ls-files", "-s", ".runner/state/tree.json").startswith("100644 ")
    assert untouched(outside)


@pytest.mark.parametrize(
    "plant", ["rm {name} && ln -s {precious} {name}", "rm {name} && mkdir {name}"]
)
def test_a_protected_file_the_agent_replaced_is_put_back_as_a_regular_file(
    project: Project, outside: Path, plant: str
) -> None:
    name = ".runner/state/schema.json"
    before = (project.root / name).read_bytes()
    hostile(project, plant.format(name=name, precious=outside / "precious.txt"))

    assert cli(project, "step").returncode == 0

    restored = project.root / name
    assert not restored.is_symlink() and restored.is_file()
    assert restored.read_bytes() == before
    assert project.git("show", f"HEAD:{name}").encode() == before
    assert untouched(outside)


def test_a_left_over_iteration_behind_a_symlinked_run_directory_is_never_renamed_outside(
    project: Project, outside: Path
) -> None:
    # events.jsonl, in the same directory, is refused first: this is a daemon swapping the run
    # directory between that check and the set-aside, done here without the timing.
    project.prepare(TWO_LEAVES)
    (outside / "1").mkdir()
    iter_dir = project.iter_dir(1)
    iter_dir.parent.parent.mkdir(parents=True, exist_ok=True)
    iter_dir.parent.symlink_to(outside)
    records = DiskRecords(RunnerPaths(project.root), Repo(project.root), iter_dir)

    with pytest.raises(UnsafePath):
        records.prepare(PrepareIterationDir(set_aside_as="1.interrupted-1"))

    assert sorted(path.name for path in outside.iterdir()) == ["1", "precious.txt"]
