"""End to end: nothing a person does to the run's branch or checkout is the agent's fault.

While an iteration's agent runs (it waits on a harness file the test makes once it has done
its part), the operator commits on the run branch, resets it, or checks another branch out in
the run's checkout. None of it is charged to an attempt: a commit outside `.runner/` is kept
(the iteration recorded on top of it as `interrupted`, the agent's work carried onto it); a
reset or a checkout stops the step with one line naming what moved and the fix, and after the
fix `runner recover` records the iteration as interrupted. `runner audit` finds nothing after.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.crash import spawn
from tests.helpers.e2e import IDENTITY, Project, lines, node

DONE = {"status": "done", "summary": "Did it."}
PASSED_FIRST = {"root": (0, False), "root.1": (0, True)}
ALL_PASSED = {"root": (0, True), "root.1": (0, True), "root.2": (0, True)}


def _while_the_agent_runs(
    project: Project, args: tuple[str, ...], iteration: int, act: object
) -> subprocess.CompletedProcess[str]:
    """`runner *args`, with `act()` done while iteration `iteration`'s agent waits."""
    assert callable(act)
    started = spawn(project, *args)
    record = project.harness / "records" / f"{iteration}.json"
    deadline = time.monotonic() + 60
    while not record.exists():
        assert started.poll() is None, started.communicate()
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.05)
    act()
    (project.harness / "go").touch()
    out, err = started.communicate(timeout=120)
    return subprocess.CompletedProcess(started.args, started.returncode, out, err)


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=True)
    return done.stdout


def _commit_a_file(where: Path, name: str) -> str:
    (where / name).write_text("the operator's\n", encoding="utf-8")
    _git(where, "add", name)
    _git(where, *IDENTITY, "commit", "--quiet", "-m", "my own commit on the run branch")
    return _git(where, "rev-parse", "HEAD").strip()


def _told(stderr: str, says: str) -> str:
    """The one stderr line that says `says`."""
    found = [line for line in lines(stderr) if says in line]
    assert len(found) == 1, stderr
    return found[0]


def _audited_clean(project: Project, *run: str) -> None:
    audited = project.runner(*run, "audit")
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "findings=0" in audited.stdout


def _attempts(tree: dict[str, object]) -> dict[str, tuple[int, bool]]:
    """Each node's attempts used (a failed or retried iteration uses one) and passes."""
    found: dict[str, tuple[int, bool]] = {}

    def walk(item: object) -> None:
        assert isinstance(item, dict)
        found[item["id"]] = (item["attempts"], item["passes"])
        for child in item["children"]:
            walk(child)

    walk(tree)
    return found


def _fix(line: str) -> list[str]:
    """The command a refusal's line names after 'put it back with' or 'run'."""
    found = re.search(r"(?:put it back with|; run) '([^']+)'", line)
    assert found is not None, line
    return shlex.split(found[1])


# The one-at-a-time loop and `runner step`: a parallel job's merge takes the operator's commit
# as it takes the work merged meanwhile (tests/e2e/test_parallel_loop.py).
@pytest.mark.one_slot
@pytest.mark.parametrize("command", ["loop", "step"])
def test_a_commit_on_the_run_branch_is_kept_as_the_operators(
    unstarted_project: Project, command: str
) -> None:
    project = unstarted_project
    project.sandbox_mode = "auto"  # the agent confined away from the run's repository
    project.set_config()
    project.write_tree(node("root"))
    project.agent_script(
        {
            1: {"files": {"feature.txt": "first\n"}, "wait_for": "go", "output": DONE},
            2: {"files": {"feature.txt": "second\n"}, "output": DONE},
        }
    )
    started = project.runner("start")
    assert started.returncode == 0, started.stderr
    run = started.stdout.split("run=")[1].split()[0]
    checkout = project.root / ".git/runner/runs" / run / "checkout"
    before = _git(checkout, "rev-parse", "HEAD").strip()
    mine: list[str] = []

    result = _while_the_agent_runs(
        project, (command,), 1, lambda: mine.append(_commit_a_file(checkout, "mine.txt"))
    )

    assert result.returncode == 0, result.stderr + result.stdout
    assert "iter=1 node=root status=interrupted guard=skipped" in result.stdout
    line = _told(result.stderr, "outside the runner")
    assert line == (
        f"runner: the run branch runner/{run} moved from {before[:12]} to {mine[0][:12]} "
        "outside the runner during iteration 1 by commits outside .runner/: kept as yours, the "
        "iteration is recorded as interrupted on top of them and its leaf runs again (no "
        "attempt used)"
    )
    branch = f"runner/{run}"
    _git(project.root, "merge-base", "--is-ancestor", mine[0], branch)
    assert _git(project.root, "show", f"{branch}:mine.txt") == "the operator's\n"
    meta = json.loads((checkout / f".runner/iterations/{run}/1/meta.json").read_text())
    assert meta["error_kind"] == "runner", meta
    # The iteration's commit, the first on top of the operator's.
    first = _git(project.root, "rev-list", "--reverse", f"{mine[0]}..{branch}").split()[0]
    assert _git(project.root, "rev-parse", f"{first}^").strip() == mine[0]
    tree = json.loads(_git(project.root, "show", f"{first}:.runner/state/tree.json"))
    assert _attempts(tree) == {"root": (0, False)}  # no attempt used
    # The agent's work is kept on top of the operator's commit, as an interrupted one's is:
    # on its attempt's ref, not on the line (no guard judged it).
    assert "feature.txt" not in _git(project.root, "ls-tree", "--name-only", first).split()
    kept = f"refs/runner/attempts/{run}/1"
    assert _git(project.root, "rev-parse", f"{kept}^").strip() == mine[0]
    assert _git(project.root, "show", f"{kept}:feature.txt") == "first\n"
    if command == "step":
        again = project.runner("step")
        assert again.returncode == 0, again.stderr
    tree = json.loads(_git(project.root, "show", f"{branch}:.runner/state/tree.json"))
    assert _attempts(tree) == {"root": (0, True)}
    assert _git(project.root, "show", f"{branch}:feature.txt") == "second\n"
    _audited_clean(project)


def _first_leaf_done(project: Project) -> str:
    for title in ("One", "Two"):  # as an operator shapes a run: audit finds no hand edit
        added = project.runner("node", "add", "root", "--title", title, "--goal", title)
        assert added.returncode == 0, added.stderr
    project.agent_script(
        {
            1: {"files": {"one.txt": "1\n"}, "output": DONE},
            2: {"files": {"two.txt": "2\n"}, "wait_for": "go", "output": DONE},
            3: {"files": {"two.txt": "2\n"}, "output": DONE},
        }
    )
    assert project.runner("step").returncode == 0
    return project.head()


def _recovered_uncharged(project: Project, iteration: int, node_id: str) -> None:
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert f"status=interrupted run={project.run_id} iter={iteration} node={node_id}" in (
        recovered.stdout
    )
    assert project.meta(iteration)["error_kind"] == "runner"


def test_a_reset_of_the_run_branch_is_refused_with_the_way_back(project: Project) -> None:
    before = _first_leaf_done(project)
    branch = project.git("branch", "--show-current").strip()

    result = _while_the_agent_runs(
        project, ("step",), 2, lambda: project.git("reset", "--quiet", "--hard", "HEAD~1")
    )

    assert result.returncode == 1, result.stdout
    line = _told(result.stderr, "outside the runner")
    reset_to = project.head()
    assert line == (
        f"runner: the run branch {branch} moved from {before[:12]} to {reset_to[:12]} outside "
        "the runner during iteration 2 (a reset or rewrite dropping the run's commits): nothing "
        f"was committed and no attempt used; put it back with 'git -C {project.root} reset "
        f"--keep {before}', then run 'runner recover'"
    )
    assert len(lines(result.stderr)) == 1, result.stderr
    assert project.head() == reset_to  # the runner moved nothing
    subprocess.run(_fix(line), check=True, capture_output=True)
    assert project.head() == before
    _recovered_uncharged(project, 2, "root.2")
    assert _attempts(project.tree()) == {**PASSED_FIRST, "root.2": (0, False)}
    assert project.runner("step").returncode == 0
    assert _attempts(project.tree()) == ALL_PASSED
    _audited_clean(project)


# The in-place run's own journal and its one iteration in flight.
@pytest.mark.one_slot
def test_a_checkout_in_the_runs_checkout_is_refused_with_the_way_back(project: Project) -> None:
    _first_leaf_done(project)
    branch = project.git("branch", "--show-current").strip()
    status_before = project.status()

    result = _while_the_agent_runs(
        project, ("loop",), 2, lambda: project.git("checkout", "--quiet", "main")
    )

    assert result.returncode == 1, result.stdout
    line = _told(result.stderr, "outside the runner")
    assert line == (
        f"runner: the run's checkout {project.root} was switched from {branch} to main outside "
        "the runner during iteration 2: nothing was committed and no attempt used; run "
        f"'git -C {project.root} checkout {branch}', then run 'runner recover'"
    )
    assert project.git("branch", "--show-current").strip() == "main"  # left as the user made it
    subprocess.run(_fix(line), check=True, capture_output=True)
    _recovered_uncharged(project, 2, "root.2")
    assert _attempts(project.tree()) == {**PASSED_FIRST, "root.2": (0, False)}
    looped = project.runner("loop")
    assert looped.returncode == 0, looped.stderr
    assert _attempts(project.tree()) == ALL_PASSED
    _audited_clean(project)
    assert project.status() == status_before


def _parallel_run(project: Project) -> tuple[str, Path]:
    """A started two-slot run of two leaves whose first runs wait for the test; its id and
    its own checkout."""
    project.sandbox_mode = "auto"
    project.set_config(parallel={"slots": 2})
    for title in ("One", "Two"):
        added = project.runner("node", "add", "root", "--title", title, "--goal", title)
        assert added.returncode == 0, added.stderr
    project.agent_script_by_node(
        {
            (leaf, 1): {"files": {f"{leaf}.txt": "work\n"}, "wait_for": "go", "output": DONE}
            for leaf in ("root.1", "root.2")
        }
        | {
            (leaf, 2): {"files": {f"{leaf}.txt": "work\n"}, "output": DONE}
            for leaf in ("root.1", "root.2")
        }
    )
    started = project.runner("start")
    assert started.returncode == 0, started.stderr
    run = started.stdout.split("run=")[1].split()[0]
    return run, project.root / ".git/runner/runs" / run / "checkout"


def _run_tree(project: Project, run: str) -> dict[str, object]:
    return json.loads(_git(project.root, "show", f"runner/{run}:.runner/state/tree.json"))  # type: ignore[no-any-return]


def test_the_parallel_loop_takes_the_operators_commit_once(unstarted_project: Project) -> None:
    project = unstarted_project
    run, checkout = _parallel_run(project)
    mine: list[str] = []

    result = _while_the_agent_runs(
        project, ("loop",), 1, lambda: mine.append(_commit_a_file(checkout, "mine.txt"))
    )

    assert result.returncode == 0, result.stderr + result.stdout
    assert "status=complete" in result.stdout
    line = _told(result.stderr, "outside the runner")
    assert f"the run branch runner/{run} moved from " in line and mine[0][:12] in line
    assert "kept as yours: the running jobs' work is merged onto them" in line
    _git(project.root, "merge-base", "--is-ancestor", mine[0], f"runner/{run}")
    assert _attempts(_run_tree(project, run)) == ALL_PASSED
    _audited_clean(project)


def test_the_parallel_loop_refuses_a_reset_with_the_way_back(unstarted_project: Project) -> None:
    project = unstarted_project
    run, checkout = _parallel_run(project)

    result = _while_the_agent_runs(
        project, ("loop",), 1, lambda: _git(checkout, "reset", "--quiet", "--hard", "HEAD~1")
    )

    assert result.returncode == 1, result.stdout
    line = _told(result.stderr, "outside the runner")
    assert "(a reset or rewrite dropping the run's commits): nothing was committed" in line
    assert f"put it back with 'git -C {checkout} reset --keep " in line
    subprocess.run(_fix(line), check=True, capture_output=True)
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert "status=interrupted" in recovered.stdout
    assert all(attempts == 0 for attempts, _ in _attempts(_run_tree(project, run)).values())
    looped = project.runner("loop")
    assert looped.returncode == 0, looped.stderr
    tree = _run_tree(project, run)
    assert all(attempts == 0 for attempts, _ in _attempts(tree).values())
    _audited_clean(project)
