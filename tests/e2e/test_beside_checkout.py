"""End to end: the run lives beside the user's checkout (README, Your first run).

The user's checkout stays on `main`, with a modified tracked file and an untracked one, for
a whole run: init, `config set` on the draft, start, loop (with the user switching branches
and committing meanwhile), finish. Its `git status` is byte-identical throughout (the branch
tip apart, once finish merged the run into it), and every runner command works from it.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from tests.helpers import ROOT
from tests.helpers.e2e import IDENTITY, Project, assert_one_error_line, lines, node

DONE = {"status": "done", "summary": "Did it."}


def _dirty(project: Project) -> None:
    (project.root / "README.md").write_text("# demo project\nmy local edit\n")
    (project.root / "notes.txt").write_text("my notes\n")


def _status(project: Project) -> str:
    return project.git("status", "--porcelain=v2", "--branch", "--untracked-files=all")


def _without_oid(status: str) -> list[str]:
    return [line for line in status.splitlines() if not line.startswith("# branch.oid")]


def _run_ref(project: Project, run_id: str, path: str) -> str:
    return project.git("show", f"runner/{run_id}:{path}")


def _started(project: Project) -> str:
    result = project.runner("start")
    assert result.returncode == 0, result.stderr
    (line,) = [x for x in lines(result.stdout) if x.startswith("started ")]
    return line.split("run=")[1].split()[0]


def test_a_whole_run_never_touches_the_users_checkout(unstarted_project: Project) -> None:
    project = unstarted_project
    _dirty(project)
    project.write_tree(node("root"))  # the draft is the user's to change before start
    configured = project.runner("config", "set", "budget.max_cost_usd", "5")
    assert configured.returncode == 0, configured.stderr  # row 5: no commit, no run needed
    assert "max_cost_usd = 5" in (project.runner_dir / "state/config.toml").read_text()
    before_start = _status(project)
    run = _started(project)
    assert project.git("branch", "--show-current").strip() == "main"
    status = _status(project)
    # The draft moved onto the run's branch; everything else of the user's is as it was.
    assert status.splitlines() == [
        line for line in before_start.splitlines() if ".runner/" not in line
    ]
    assert "max_cost_usd = 5" in _run_ref(project, run, ".runner/state/config.toml")
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    # Row 2: the user's own branch switches are never the agent's.
    project.git("checkout", "--quiet", "-b", "elsewhere")
    project.git("checkout", "--quiet", "main")
    looped = project.runner("loop")  # row 1: from a checkout with local changes
    assert looped.returncode == 0, looped.stderr + looped.stdout
    assert _status(project) == status
    assert not (project.root / "feature.txt").exists()
    for command in (("status",), ("history",), ("audit",), ("validate",), ("runs",)):
        result = project.runner(*command)
        assert result.returncode in (0, 2), (command, result.stderr)
    assert _status(project) == status
    # The user commits on main meanwhile: finish merges into the updated main.
    (project.root / "other.txt").write_text("theirs\n")
    project.git("add", "other.txt")
    project.git(*IDENTITY, "commit", "--quiet", "-m", "user work")
    user_tip = project.git("rev-parse", "main").strip()
    status = _status(project)
    finished = project.runner("finish")
    assert finished.returncode == 0, finished.stderr
    assert project.git("rev-parse", "main^1").strip() == user_tip
    assert (
        project.git("rev-parse", "main^2").strip()
        == project.git("rev-parse", f"refs/runner/finished/{run}").strip()
    )
    assert (project.root / "feature.txt").read_text() == "new\n"
    assert project.git("ls-tree", "main", ".runner").strip() == ""  # row 8
    assert _without_oid(_status(project)) == _without_oid(status)
    # A second finish does nothing new.
    merged = project.git("rev-parse", "main").strip()
    again = project.runner("finish")
    assert again.returncode == 0, again.stderr
    assert "already finished" in again.stdout
    assert project.git("rev-parse", "main").strip() == merged
    shown = project.runner("status")
    assert f"status: finished run={run} into=main commit={merged[:8]}" in shown.stdout


def test_finish_squash_delete_branch_keeps_the_run_readable(unstarted_project: Project) -> None:
    project = unstarted_project
    _dirty(project)
    project.write_tree(node("root"))
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    assert project.runner("loop").returncode == 0
    status = _status(project)
    done = project.runner("finish", "--squash", "--delete-branch")
    assert done.returncode == 0, done.stderr
    assert project.git("branch", "--list", f"runner/{run}").strip() == ""
    assert _without_oid(_status(project)) == _without_oid(status)
    for command in ("status", "history", "report", "audit"):
        result = project.runner(command)
        assert result.returncode == 0, (command, result.stderr)
    assert f"status: finished run={run} into=main" in project.runner("status").stdout


def test_finish_refuses_changing_nothing_when_local_changes_would_be_lost(
    unstarted_project: Project,
) -> None:
    project = unstarted_project
    project.write_tree(node("root"))
    run = _started(project)
    project.agent_script({1: {"files": {"README.md": "# run's readme\n"}, "output": DONE}})
    assert project.runner("loop").returncode == 0
    _dirty(project)  # README.md has the user's uncommitted edit, which the merge would replace
    status, main = _status(project), project.git("rev-parse", "main").strip()
    for _ in range(2):  # row 3: a retry stacks nothing
        refused = project.runner("finish")
        assert "would be overwritten" in assert_one_error_line(refused)
        assert "README.md" in refused.stderr
        assert _status(project) == status
        assert project.git("rev-parse", "main").strip() == main
    assert project.git("rev-parse", f"runner/{run}").strip()


def test_finish_into_a_branch_checked_out_in_another_worktree(
    unstarted_project: Project, tmp_path: object
) -> None:
    project = unstarted_project
    project.write_tree(node("root"))
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    assert project.runner("loop").returncode == 0
    project.git("checkout", "--quiet", "-b", "mine")
    other = project.root.parent / "main-worktree"
    project.git("worktree", "add", "--quiet", str(other), "main")
    finished = project.runner("finish")
    assert finished.returncode == 0, finished.stderr
    assert (other / "feature.txt").read_text() == "new\n"
    clean = subprocess.run(
        ["git", "-C", str(other), "status", "--porcelain"], capture_output=True, text=True
    )
    assert clean.stdout == ""  # the worktree's index and files follow its branch
    assert project.git("branch", "--show-current").strip() == "mine"
    assert (
        project.git("rev-parse", "main^2").strip()
        == project.git("rev-parse", f"refs/runner/finished/{run}").strip()
    )


def test_finish_refuses_on_audit_findings_unless_forced(project: Project) -> None:
    run = project.prepare(node("root"))  # a hand edit of the tree: an audit finding
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    assert project.runner("loop").returncode == 0
    assert project.runner("audit").returncode == 1
    before = project.git("rev-parse", "main").strip()
    refused = project.runner("finish")
    assert "'runner audit' has 1 finding(s)" in assert_one_error_line(refused)
    assert project.git("rev-parse", "main").strip() == before
    forced = project.runner("finish", "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"finish: run={run} into=main" in forced.stdout


def test_start_names_every_missing_program_before_creating_anything(
    unstarted_project: Project,
) -> None:
    project = unstarted_project
    config = project.runner_dir / "state/config.toml"
    text = config.read_text()
    project.runner("config", "set", "agent.command", '["no-such-agent-xyz"]')
    project.runner("config", "set", "guard.command", '["no-such-guard-xyz"]')
    assert config.read_text() != text
    refused = project.runner("start")
    line = assert_one_error_line(refused)
    assert "no-such-agent-xyz" in line and "no-such-guard-xyz" in line
    assert project.git("branch", "--list", "runner/*").strip() == ""
    assert project.runner_dir.is_dir()


def test_start_leaves_a_program_the_setup_makes_to_the_scratch_checkout(
    unstarted_project: Project,
) -> None:
    """A guard in the virtualenv `[sandbox] setup` makes is not there before the first slot."""
    project = unstarted_project
    project.runner("config", "set", "guard.command", '[".venv/bin/python", "-m", "unittest"]')
    refused = project.runner("start")
    assert "guard.command: program '.venv/bin/python' does not exist" in assert_one_error_line(
        refused
    )
    project.runner("config", "set", "sandbox.setup", '["python3", "-m", "venv", ".venv"]')
    started = project.runner("start")
    assert started.returncode == 0, started.stderr


def test_init_force_refuses_on_a_started_run(project: Project) -> None:
    run = project.run_id
    refused = project.runner("init", "--force")
    assert f"run {run} is started and not finished" in assert_one_error_line(refused)
    assert project.run_id == run
    assert project.runner("init", "--force", "--discard-run").returncode == 0


def test_answer_usage_reads_sensibly(project: Project) -> None:
    usage = project.runner("answer", "--help").stdout
    assert "[OPTIONS] [TEXT]" in usage and "[[TEXT]]" not in usage


def _first_run_commands() -> list[list[str]]:
    """The `runner` lines of the first bash block of the README's "Your first run"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Your first run", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    words = (shlex.split(line, comments=True) for line in block.splitlines())
    return [argv for argv in words if argv and argv[0] == "runner"]


def test_the_readmes_first_run_never_leaves_the_users_branch(unstarted_project: Project) -> None:
    """The README's commands after init (done by the fixture with the fake agent), exactly."""
    commands = _first_run_commands()
    assert [argv[1] for argv in commands] == ["init", "config", "start", "loop", "finish"]
    project = unstarted_project
    _dirty(project)
    project.write_tree(node("root"))
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    status = _status(project)
    for argv in commands[1:]:
        result = project.runner(*argv[1:])
        assert result.returncode == 0, (argv, result.stderr)
        assert project.git("branch", "--show-current").strip() == "main"
    assert (project.root / "feature.txt").read_text() == "new\n"
    assert _without_oid(_status(project)) == [
        line for line in _without_oid(status) if ".runner/" not in line
    ]


def test_two_runs_of_one_repository_loop_at_once(unstarted_project: Project) -> None:
    import shutil

    from tests.helpers.e2e import PYTHON

    project = unstarted_project
    _dirty(project)
    project.write_tree(node("root"))
    draft = project.root.parent / "draft"
    shutil.copytree(project.runner_dir, draft)
    first = _started(project)
    shutil.copytree(draft, project.runner_dir)  # a second draft, for a second run
    result = project.runner("start", "--new")
    assert result.returncode == 0, result.stderr
    second = result.stdout.split("run=")[1].split()[0]
    # Each agent sleeps long enough that the loops overlap: one lock would refuse the second.
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE, "sleep": 2}})
    status = _status(project)
    loops = [
        subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "--run", run, "loop"],
            cwd=project.root,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run in (first, second)
    ]
    outputs = [loop.communicate(timeout=120) for loop in loops]
    for loop, (out, err) in zip(loops, outputs, strict=True):
        assert loop.returncode == 0, err + out
        assert "status=complete" in out
    for run in (first, second):
        audited = project.runner("--run", run, "audit")
        assert audited.returncode == 0, audited.stdout + audited.stderr
        assert "findings=0" in audited.stdout
    listed = project.runner("runs").stdout
    assert first in listed and second in listed
    assert _status(project) == status


def test_a_user_commit_on_main_during_a_four_slot_loop_is_merged_by_finish(
    unstarted_project: Project,
) -> None:
    import json
    import sys
    import time

    from tests.e2e.test_parallel_loop import NODE_AGENT, NODE_GUARD, _flat_tree
    from tests.helpers.e2e import PYTHON

    project = unstarted_project
    _dirty(project)
    leaves = ["a", "b", "c", "d"]
    agent, guard = project.harness / "node_agent.py", project.harness / "node_guard.py"
    agent.write_text(NODE_AGENT, encoding="utf-8")
    guard.write_text(NODE_GUARD, encoding="utf-8")
    actions = {leaf: [{"files": {f"src/{leaf}.txt": f"{leaf}\n"}, "sleep": 2}] for leaf in leaves}
    (project.harness / "nodes.json").write_text(json.dumps(actions), encoding="utf-8")
    project.set_config(
        agent_command=[sys.executable, str(agent)],
        guard_command=[sys.executable, str(guard)],
        parallel={"slots": 4},
    )
    project.write_tree(_flat_tree(leaves))
    run = _started(project)
    status = _status(project)
    loop = subprocess.Popen(
        [PYTHON, "-m", "runner_shell", "loop"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1)  # the four agents are at work: the user goes on with theirs
    project.git("checkout", "--quiet", "-b", "side")
    project.git("checkout", "--quiet", "main")
    (project.root / "other.txt").write_text("theirs\n")
    project.git("add", "other.txt")
    project.git(*IDENTITY, "commit", "--quiet", "-m", "user work")
    user_tip = project.git("rev-parse", "main").strip()
    out, err = loop.communicate(timeout=120)
    assert loop.returncode == 0, err + out
    assert "agent" not in err  # nothing the user did was charged to an agent
    assert _without_oid(_status(project)) == _without_oid(status)
    finished = project.runner("finish")
    assert finished.returncode == 0, finished.stderr
    assert "mode=merge" in finished.stdout
    assert project.git("rev-parse", "main^1").strip() == user_tip
    assert (
        project.git("rev-parse", "main^2").strip()
        == project.git("rev-parse", f"refs/runner/finished/{run}").strip()
    )
    for leaf in leaves:
        assert (project.root / "src" / f"{leaf}.txt").read_text() == f"{leaf}\n"
    assert (project.root / "other.txt").read_text() == "theirs\n"
    assert _without_oid(_status(project)) == _without_oid(status)


def test_config_set_ratchet_on_the_draft_measures_the_baseline_at_start(
    unstarted_project: Project,
) -> None:
    from tests.e2e.test_ratchet_guard import _configure

    project = unstarted_project
    _configure(project, "exit", commit=False)
    project.git("add", "--", ".", ":!.runner")  # the user's code, never the draft
    project.git(*IDENTITY, "commit", "--quiet", "-m", "the package")
    _dirty(project)
    configured = project.runner("config", "set", "guard.mode", "ratchet")
    assert configured.returncode == 0, configured.stderr  # row 5: the draft is the user's
    started = project.runner("start", timeout=120)
    assert started.returncode == 0, started.stderr
    assert lines(started.stdout)[-1] == "start: baseline tests=1/6 (5 not passing at the start)"
    assert project.git("branch", "--show-current").strip() == "main"


def test_node_commands_shape_the_draft_before_start(unstarted_project: Project) -> None:
    project = unstarted_project
    added = project.runner(
        "node", "add", "root", "--title", "Docs", "--goal", "Document it", "--acceptance", "ok"
    )
    assert added.returncode == 0, added.stderr
    assert project.git("branch", "--list", "runner/*").strip() == ""  # nothing committed
    assert [child["id"] for child in project.tree()["children"]] == ["root.1"]
    run = _started(project)
    committed = json.loads(_run_ref(project, run, ".runner/state/tree.json"))
    assert [child["id"] for child in committed["children"]] == ["root.1"]


# The run's journal names the agent's process group in the one-at-a-time loop (a parallel job
# keeps a journal of its own).
@pytest.mark.one_slot
def test_kill_9_then_recover_from_the_users_checkout(unstarted_project: Project) -> None:
    import signal
    import time

    from tests.helpers.crash import spawn

    project = unstarted_project
    _dirty(project)
    project.write_tree(node("root"))
    run = _started(project)
    status = _status(project)
    project.agent_script({1: {"output": DONE, "sleep": 30}})
    holder = spawn(project, "loop")
    journal = project.root / ".git/runner/runs" / run / "runner-journal.json"
    deadline = time.monotonic() + 30
    agent_running = re.compile(r'"process_groups":\s*\[\s*\d')
    while not agent_running.search(journal.read_text() if journal.exists() else ""):
        assert time.monotonic() < deadline, "the loop never started its agent"
        time.sleep(0.1)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert "interrupted" in project.runner("status").stdout
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert f"recover: status=interrupted run={run} iter=1 node=root" in recovered.stdout
    assert not journal.exists()
    assert _status(project) == status


def test_commands_work_from_a_linked_worktree(unstarted_project: Project) -> None:
    from tests.helpers.e2e import PYTHON

    project = unstarted_project
    project.write_tree(node("root"))
    run = _started(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    linked = project.root.parent / "linked"
    project.git("worktree", "add", "--quiet", "-b", "feature", str(linked))
    (linked / "scratch.txt").write_text("mine\n")

    def runner(*args: str) -> subprocess.CompletedProcess[str]:
        command = [PYTHON, "-m", "runner_shell", *args]
        return subprocess.run(
            command, cwd=linked, env=project.env, capture_output=True, text=True, timeout=60
        )

    looped = runner("loop")
    assert looped.returncode == 0, looped.stderr
    assert f"run={run}" in looped.stdout
    assert runner("--run", run, "status").returncode == 0
    assert not (linked / "feature.txt").exists()
    assert (linked / "scratch.txt").read_text() == "mine\n"
