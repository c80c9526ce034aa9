"""`runner loop` with `[parallel] slots`: jobs in their own slots, merged in iteration order.

The fake agent here is keyed by node and attempt, not by iteration: what it does depends only
on the leaf it is given and how many attempts that leaf has used, so the same scenario run with
one slot and with four must end in the same tree, the same passes and the same attempts.
`nodes.json` maps a node id to a list of actions, one per attempt (the last repeats): `files`
({path: text}), `append` ({path: line} added at the file's end), `sleep`, `status` (the
executor's status, `done` by default), `output` (the whole output, for a decomposer),
`wait_once` (the first run only writes this wait file and exits 1: a usage limit).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.helpers.e2e import Project, assert_one_error_line, child_spec, node

NODE_AGENT = r"""
import json, os, sys, time
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
node_id = os.environ["RUNNER_NODE_ID"]
sys.stdin.read()
tree = json.loads(Path(".runner/state/tree.json").read_text(encoding="utf-8"))

def find(item):
    if item["id"] == node_id:
        return item
    for child in item["children"]:
        found = find(child)
        if found is not None:
            return found
    return None

attempt = find(tree)["attempts"]
actions = json.loads((harness / "nodes.json").read_text(encoding="utf-8")).get(node_id, [{}])
action = actions[min(attempt, len(actions) - 1)]
with open(harness / "runs.txt", "a", encoding="utf-8") as runs:
    runs.write(f"{node_id} {attempt} start {time.time()}\n")
for name, text in action.get("files", {}).items():
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text, encoding="utf-8")
for name, line in action.get("append", {}).items():
    path = Path(name)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(before + line + "\n", encoding="utf-8")
time.sleep(action.get("sleep", 0))
if "wait_for" in action:  # the test creates this harness file once it has done its part
    gate, deadline = harness / action["wait_for"], time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
marker = harness / f"{node_id}.waited"
if "wait_once" in action and not marker.exists():
    marker.write_text("1")
    Path(os.environ["RUNNER_WAIT_PATH"]).write_text(json.dumps(action["wait_once"]))
    sys.exit(1)
output = {"status": action.get("status", "done"), "summary": f"{node_id} attempt {attempt}"}
output = action.get("output", output)
Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(output), encoding="utf-8")
"""

# Passes unless every file of one of fail_if.json's lists is there: work that breaks together.
NODE_GUARD = r"""
import json, os, sys
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
rules_path = harness / "fail_if.json"
rules = json.loads(rules_path.read_text()) if rules_path.exists() else []
for together in rules:
    if all(Path(name).exists() for name in together):
        print(f"{together} are there together")
        sys.exit(1)
sys.exit(0)
"""


def _flat_tree(leaves: Sequence[str]) -> dict[str, Any]:
    return node(
        "root",
        children=[node(leaf, order=index) for index, leaf in enumerate(leaves)],
    )


def _setup(
    project: Project,
    tree: Mapping[str, Any],
    actions: Mapping[str, Sequence[Mapping[str, Any]]],
    slots: int,
    fail_if: Sequence[Sequence[str]] | None = None,
    merge_sessions: bool = False,
) -> None:
    agent = project.harness / "node_agent.py"
    agent.write_text(NODE_AGENT, encoding="utf-8")
    guard = project.harness / "node_guard.py"
    guard.write_text(NODE_GUARD, encoding="utf-8")
    (project.harness / "nodes.json").write_text(json.dumps(actions), encoding="utf-8")
    if fail_if is not None:
        (project.harness / "fail_if.json").write_text(json.dumps(fail_if), encoding="utf-8")
    config: dict[str, Any] = {
        "agent_command": [sys.executable, str(agent)],
        "guard_command": [sys.executable, str(guard)],
        # Written for one slot too: RUNNER_TEST_SLOTS gives more to a config that names none.
        # Its agent is no merger: a conflict runs the leaf again (test_merge_sessions.py has
        # one that is).
        "parallel": {"slots": slots, "merge_sessions": merge_sessions},
    }
    project.prepare(tree, **config)


def _loop(project: Project, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return project.runner("loop", timeout=timeout)


def _outcome(project: Project) -> tuple[str, dict[str, tuple[bool, int]]]:
    """tree.json's bytes and each node's passes and attempts."""
    text = project.tree_path.read_text(encoding="utf-8")
    found: dict[str, tuple[bool, int]] = {}

    def walk(item: Mapping[str, Any]) -> None:
        found[item["id"]] = (item["passes"], item["attempts"])
        for child in item["children"]:
            walk(child)

    walk(json.loads(text))
    return text, found


def _loop_with_agents_running(project: Project, count: int) -> subprocess.Popen[str]:
    """`runner loop` in the background, once `count` agents have started (runs.txt)."""
    loop = subprocess.Popen(
        [sys.executable, "-m", "runner_shell", "loop"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = project.harness / "runs.txt"
    deadline = time.monotonic() + 30
    while not (runs.exists() and len(runs.read_text().splitlines()) == count):
        assert time.monotonic() < deadline, f"the {count} jobs did not start"
        time.sleep(0.05)
    return loop


def _starts(project: Project) -> list[tuple[str, float]]:
    lines = (project.harness / "runs.txt").read_text(encoding="utf-8").splitlines()
    return [(line.split()[0], float(line.split()[3])) for line in lines]


@pytest.mark.serial  # four 2 s agents must start within 1.5 s and end within 8 s
def test_four_leaves_run_at_once_and_merge_in_order(project: Project) -> None:
    leaves = ["a", "b", "c", "d"]
    actions = {leaf: [{"files": {f"src/{leaf}.txt": f"{leaf}\n"}, "sleep": 2}] for leaf in leaves}
    _setup(project, _flat_tree(leaves), actions, slots=4)
    started = time.monotonic()
    result = _loop(project)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    _, found = _outcome(project)
    assert all(found[leaf] == (True, 0) for leaf in leaves), found
    assert found["root"] == (True, 0)
    for leaf in leaves:
        assert (project.root / "src" / f"{leaf}.txt").read_text() == f"{leaf}\n"
    subjects = project.subjects()
    numbered = [subject for subject in subjects if "iter" in subject]
    assert len(numbered) == 4, subjects
    starts = [moment for _, moment in _starts(project)]
    assert max(starts) - min(starts) < 1.5, "the four leaves did not start together"
    assert elapsed < 4 * 2, elapsed
    assert project.status() == ""
    # Each job names the commit it started from; the audit merges it from there again.
    start = project.git("rev-list", "-n", "1", "HEAD~4").strip()
    assert [project.meta(number)["job_base"] for number in (1, 2, 3, 4)] == [start] * 4
    trailer = project.git("log", "-1", "--format=%(trailers:key=Runner-Job-Base,valueonly)")
    assert trailer.strip() == start
    _audit_finds_only_the_setup(project)


def _attempt_file(project: Project, node_id: str, path: str) -> str:
    """`path` as the node's last iteration set it aside on its attempt ref (an iteration not
    judged a pass, an interrupted one too, keeps its files there, never on the run branch)."""
    metas = [
        json.loads(meta.read_text(encoding="utf-8"))
        for meta in project.iter_dir(1).parent.glob("*/meta.json")
    ]
    last = max(meta["iter"] for meta in metas if meta["node_id"] == node_id)
    return project.git("show", f"refs/runner/attempts/{project.run_id}/{last}:{path}")


def _audit_finds_only_the_setup(project: Project) -> None:
    """The audit replays every merged iteration; only the test's own setup commit is a hand edit."""
    audit = project.runner("audit")
    findings = [line for line in audit.stdout.splitlines() if line.startswith("audit: finding ")]
    assert all(" iter=- " in line for line in findings), audit.stdout


def test_two_jobs_editing_one_line_conflict_and_the_later_runs_again(project: Project) -> None:
    project.root.joinpath("shared.txt").write_text("zero\n", encoding="utf-8")
    actions = {
        "a": [{"files": {"shared.txt": "from a\n"}, "sleep": 1}],
        "b": [{"files": {"shared.txt": "from b\n"}, "sleep": 1}],
    }
    _setup(project, _flat_tree(["a", "b"]), actions, slots=2)
    result = _loop(project)
    assert result.returncode == 0, result.stderr
    _, found = _outcome(project)
    assert found["a"] == (True, 0) and found["b"] == (True, 0), found
    assert (project.root / "shared.txt").read_text() == "from b\n"
    meta = project.meta(2)
    assert meta["error_kind"] == "runner", meta
    assert "files do not merge" in (project.iter_dir(2) / "runner_error.log").read_text()
    # b ran twice: once beside a (its work not merged), once on a's result.
    assert [name for name, _ in _starts(project)].count("b") == 2
    _audit_finds_only_the_setup(project)


def test_edits_to_different_lines_of_one_file_merge(project: Project) -> None:
    project.root.joinpath("shared.txt").write_text("1\n2\n3\n4\n5\n", encoding="utf-8")
    actions = {
        "a": [{"files": {"shared.txt": "1a\n2\n3\n4\n5\n"}, "sleep": 1}],
        "b": [{"files": {"shared.txt": "1\n2\n3\n4\n5b\n"}, "sleep": 1}],
    }
    _setup(project, _flat_tree(["a", "b"]), actions, slots=2)
    result = _loop(project)
    assert result.returncode == 0, result.stderr
    assert (project.root / "shared.txt").read_text() == "1a\n2\n3\n4\n5b\n"
    assert len([name for name, _ in _starts(project)]) == 2


def test_jobs_that_pass_alone_and_break_together_run_again(project: Project) -> None:
    actions = {
        "a": [{"files": {"a.flag": "a\n"}, "sleep": 1}],
        "b": [{"files": {"b.flag": "b\n"}, "sleep": 1}],
    }
    _setup(project, _flat_tree(["a", "b"]), actions, slots=2, fail_if=[["a.flag", "b.flag"]])
    result = _loop(project)
    # b passes alone but not after a: the merged guard fails, b runs again (no attempt used),
    # and on a's result its own guard fails: an attempt each time, until it is stuck.
    _, found = _outcome(project)
    assert found["a"] == (True, 0), found
    assert found["b"][0] is False, found
    meta = project.meta(2)
    assert meta["error_kind"] == "runner", meta
    assert "once iterations 1 are merged" in (project.iter_dir(2) / "runner_error.log").read_text()
    assert (project.iter_dir(2) / "guard.merged.log").is_file()
    assert found["b"] == (False, 3), found  # each later attempt fails on a's result alone
    assert result.returncode != 0


def _scenario() -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Two subtrees, a leaf that fails once, a decomposer beside executors, a stuck-free end."""
    tree = node(
        "root",
        children=[
            node("p", order=0, children=[node("p1", order=0), node("p2", order=1)]),
            node(
                "q", order=1, children=[node("q1", order=0), node("q2", order=1, next_="decompose")]
            ),
            node("r", order=2),
        ],
    )
    children = [child_spec("first"), child_spec("second")]
    actions: dict[str, list[dict[str, Any]]] = {
        "p1": [{"files": {"p1.txt": "p1\n"}, "sleep": 0.5}],
        "p2": [{"status": "retry", "sleep": 0.3}, {"files": {"p2.txt": "p2\n"}}],
        "q1": [{"files": {"q1.txt": "q1\n"}, "sleep": 0.2}],
        "q2": [{"output": {"summary": "split", "children": children}}],
        "q2.1": [{"files": {"q2-1.txt": "first\n"}}],
        "q2.2": [{"files": {"q2-2.txt": "second\n"}, "sleep": 0.4}],
        "r": [{"files": {"r.txt": "r\n"}, "sleep": 0.1}],
    }
    return tree, actions


@pytest.mark.parametrize("slots", [1, 4])
def test_one_slot_and_four_end_alike(project: Project, slots: int) -> None:
    tree, actions = _scenario()
    _setup(project, tree, actions, slots=slots)
    result = _loop(project, timeout=180)
    assert result.returncode == 0, result.stderr
    text, found = _outcome(project)
    files = sorted(path.name for path in project.root.glob("*.txt"))
    expected = _EXPECTED.setdefault("outcome", (text, found, files))
    assert (text, found, files) == expected
    _audit_finds_only_the_setup(project)


# The first parametrisation's outcome, which the other must equal byte for byte.
_EXPECTED: dict[str, tuple[str, dict[str, tuple[bool, int]], list[str]]] = {}


def test_a_runner_error_stops_the_loop_once_the_running_jobs_have_merged(
    project: Project,
) -> None:
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"output": {"nonsense": 1}}],
        "b": [{"files": {"b.txt": "b\n"}, "sleep": 2}],
    }
    _setup(project, _flat_tree(["a", "b"]), actions, slots=2)
    project.set_config(
        agent_command=[sys.executable, str(project.harness / "node_agent.py")],
        guard_command=[sys.executable, str(project.harness / "node_guard.py")],
        parallel={"slots": 2},
        loop={"max_consecutive_runner_errors": 1},
    )
    project.commit_setup()
    result = _loop(project, timeout=60)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("runner: runner error: "), result.stderr
    _, found = _outcome(project)
    assert found["b"] == (True, 0), found  # b, running when a failed, finished and merged
    assert project.status() == ""


def test_kill_9_with_four_jobs_running_then_recover_and_loop(project: Project) -> None:
    leaves = ["a", "b", "c", "d"]
    first = {leaf: [{"files": {f"{leaf}.txt": "x\n"}, "sleep": 30}] for leaf in leaves}
    _setup(project, _flat_tree(leaves), first, slots=4)
    loop = _loop_with_agents_running(project, 4)
    time.sleep(0.5)
    loop.kill()
    loop.wait(timeout=10)
    refused = project.runner("loop")
    assert refused.returncode == 1
    assert "run 'runner recover'" in refused.stderr, refused.stderr
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert len(recovered.stdout.splitlines()) == 4, recovered.stdout
    _, found = _outcome(project)
    assert all(found[leaf] == (False, 0) for leaf in leaves), found  # no attempt consumed
    assert project.status() == ""
    for leaf in leaves:  # every agent's work is kept on its attempt ref, none on the head
        assert _attempt_file(project, leaf, f"{leaf}.txt") == "x\n"
        assert not (project.root / f"{leaf}.txt").exists()
    (project.harness / "nodes.json").write_text(
        json.dumps({leaf: [{"files": {f"{leaf}.txt": "y\n"}}] for leaf in leaves}),
        encoding="utf-8",
    )
    result = _loop(project)
    assert result.returncode == 0, result.stderr
    _, found = _outcome(project)
    assert all(found[leaf] == (True, 0) for leaf in leaves), found
    assert project.runner("audit").returncode in (0, 1)
    _audit_finds_only_the_setup(project)


def test_a_budget_counts_the_time_of_jobs_not_yet_committed(project: Project) -> None:
    """a runs long; b (and c, if b's time leaves room for it) finish but wait for a to merge.
    Their time and a's so far reach `max_wall_secs` before anything is committed, so d never
    starts: by the time c could have ended, a alone has run for 2 s."""
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"sleep": 6}],
        "b": [{"sleep": 0.3}],
        "c": [{"sleep": 2}],
        "d": [{"sleep": 0.3}],
    }
    _setup(project, _flat_tree(["a", "b", "c", "d"]), {}, slots=2)
    (project.harness / "nodes.json").write_text(json.dumps(actions), encoding="utf-8")
    project.set_config(
        agent_command=[sys.executable, str(project.harness / "node_agent.py")],
        guard_command=[sys.executable, str(project.harness / "node_guard.py")],
        parallel={"slots": 2},
        budget={"max_wall_secs": 2},
    )
    project.commit_setup()
    result = _loop(project)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1:] and result.stdout.splitlines()[-1].startswith(
        "loop: status=budget "
    ), (result.stdout, result.stderr)
    assert "d" not in [name for name, _ in _starts(project)]
    assert project.status() == ""


def test_a_usage_limit_pauses_scheduling_while_the_running_jobs_finish(project: Project) -> None:
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"wait_once": {"retry_after_secs": 3}}],
        "b": [{"files": {"b.txt": "b\n"}, "sleep": 1}],
        "c": [{"files": {"c.txt": "c\n"}}],
    }
    _setup(project, _flat_tree(["a", "b", "c"]), actions, slots=2)
    project.set_config(
        agent_command=[sys.executable, str(project.harness / "node_agent.py")],
        guard_command=[sys.executable, str(project.harness / "node_guard.py")],
        parallel={"slots": 2},
        loop={"max_wait_secs": 10},
    )
    project.commit_setup()
    result = _loop(project)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].endswith("iter=1 node=a status=rate_limited guard=skipped")
    assert out[1].startswith(f"loop: wait run={project.run_id} reason=rate_limited until=")
    _, found = _outcome(project)
    assert all(found[leaf] == (True, 0) for leaf in "abc"), found  # the limit used no attempt
    first_a, again = [moment for name, moment in _starts(project) if name == "a"]
    first_c = next(moment for name, moment in _starts(project) if name == "c")
    # b, running when a hit its limit, finished; nothing started during the 3 s wait.
    assert first_c >= first_a + 2.5 and again >= first_a + 2.5, _starts(project)


def test_ctrl_c_stops_every_running_job_and_commits_each_as_interrupted(project: Project) -> None:
    leaves = ["a", "b", "c"]
    _setup(project, _flat_tree(leaves), {leaf: [{"sleep": 30}] for leaf in leaves}, slots=3)
    loop = _loop_with_agents_running(project, 3)
    started = time.monotonic()
    loop.send_signal(signal.SIGINT)
    out, err = loop.communicate(timeout=30)
    assert time.monotonic() - started < 15, "the jobs' agents were not stopped"
    assert loop.returncode == 130, err
    subjects = project.subjects()[-3:]
    assert [subject.split(" node ")[1].split()[0] for subject in subjects] == leaves
    assert all("status=interrupted" in subject for subject in subjects), subjects
    for iteration in (1, 2, 3):
        error = (project.iter_dir(iteration) / "runner_error.log").read_text()
        assert "interrupted by SIGINT" in error
    _, found = _outcome(project)
    assert all(found[leaf] == (False, 0) for leaf in leaves), found
    assert project.status() == ""
    assert not list((project.root / ".git" / "runner-jobs").glob("*.json"))
    assert out.splitlines()[-1].startswith("loop: status=interrupted"), out


def test_a_stuck_leaf_while_others_run_stops_the_loop_once_they_have_merged(
    project: Project,
) -> None:
    tree = node("root", children=[node("a", order=0, max_attempts=2), node("b", order=1)])
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"status": "retry"}],
        "b": [{"files": {"b.txt": "b\n"}, "sleep": 2}],
    }
    _setup(project, tree, actions, slots=2)
    result = _loop(project)
    out = result.stdout.splitlines()
    assert out[-1] == f"loop: status=stuck run={project.run_id} id=a path=root/a attempts=2/2"
    assert result.returncode == 3
    _, found = _outcome(project)
    assert found["a"] == (False, 2) and found["b"] == (True, 0), found
    assert (project.root / "b.txt").read_text() == "b\n"
    assert project.status() == ""


def test_a_loop_that_fails_with_jobs_running_stops_them_and_leaves_them_to_recover(
    project: Project,
) -> None:
    """events.jsonl replaced by a directory: the next job cannot start, so the loop ends in one
    line, the running job's agent is stopped at once, and `runner recover` records it."""
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"sleep": 30}],
        "b": [{"sleep": 1}],
        "c": [{}],
    }
    _setup(project, _flat_tree(["a", "b", "c"]), actions, slots=2)
    loop = _loop_with_agents_running(project, 2)
    events = project.runner_dir / "iterations" / project.run_id / "events.jsonl"
    events.unlink()
    events.mkdir()
    started = time.monotonic()
    _, err = loop.communicate(timeout=60)
    assert time.monotonic() - started < 20, "the running job's agent was not stopped"
    assert loop.returncode == 1
    assert len(err.strip().splitlines()) == 1 and "events.jsonl" in err, err
    events.rmdir()
    refused = project.runner("loop")
    assert "run 'runner recover'" in refused.stderr, refused.stderr
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    _, found = _outcome(project)
    assert found["a"] == (False, 0), found
    assert project.status() == ""


def test_tell_and_node_commands_wait_for_the_loop_as_with_one_slot(project: Project) -> None:
    """Steering takes the lock the loop holds for its whole run: refused in one line while
    jobs run; once `runner stop` let the running jobs merge and the loop end, each goes in."""
    leaves = ["a", "b", "c"]
    # a and b outlast the three commands below however loaded the machine (they end once the
    # test opens their gate, after `runner stop`): c never starts.
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"wait_for": "stopped"}],
        "b": [{"wait_for": "stopped"}],
        "c": [{}],
    }
    _setup(project, _flat_tree(leaves), actions, slots=2)
    loop = _loop_with_agents_running(project, 2)
    try:
        for command in (("tell", "Use tabs."), ("node", "skip", "c")):
            refused = project.runner(*command)
            assert "another runner holds the lock" in assert_one_error_line(refused)
        assert project.runner("stop").returncode == 0
    finally:
        (project.harness / "stopped").write_text("", encoding="utf-8")
        out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, err
    assert out.splitlines()[-1].startswith("loop: status=paused"), out
    _, found = _outcome(project)
    assert (found["a"], found["b"], found["c"]) == ((True, 0), (True, 0), (False, 0)), found
    assert project.runner("tell", "Use tabs.").returncode == 0
    assert project.runner("node", "skip", "c").returncode == 0
    _audit_finds_only_the_setup(project)


def test_recover_keeps_a_finished_jobs_work_after_its_slot_went_to_another(
    project: Project,
) -> None:
    """Job 2 finished and freed its slot, where job 3 now runs, while job 1 still ran: after
    kill -9 its work comes from what was listed when it finished, not from the slot."""
    actions: dict[str, list[dict[str, Any]]] = {
        "a": [{"files": {"a.txt": "a\n"}, "sleep": 30}],
        "b": [{"files": {"b.txt": "b\n"}}],
        "c": [{"files": {"c.txt": "c\n"}, "sleep": 30}],
    }
    _setup(project, _flat_tree(["a", "b", "c"]), actions, slots=2)
    loop = _loop_with_agents_running(project, 3)
    time.sleep(0.5)
    loop.kill()
    loop.wait(timeout=10)
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert len(recovered.stdout.splitlines()) == 3, recovered.stdout
    for leaf in ("a", "b", "c"):  # kept on its attempt ref: an interrupted job is no pass
        assert _attempt_file(project, leaf, f"{leaf}.txt") == f"{leaf}\n"
    assert not list((project.root / ".git" / "runner-jobs").iterdir())
    assert project.status() == ""


def test_recover_names_a_running_jobs_file_that_work_merged_since_changed(
    project: Project,
) -> None:
    """Job 1 merged a line job 2 also changed before the kill: job 2's other files are kept,
    carried onto the head, on its attempt ref; that one is left out, and named."""
    project.root.joinpath("shared.txt").write_text("zero\n", encoding="utf-8")
    actions = {
        "a": [{"files": {"shared.txt": "from a\n"}, "sleep": 0.5}],
        "b": [{"files": {"shared.txt": "from b\n", "b.txt": "b\n"}, "sleep": 30}],
    }
    _setup(project, _flat_tree(["a", "b"]), actions, slots=2)
    loop = _loop_with_agents_running(project, 2)
    deadline = time.monotonic() + 30
    while not any(" iter 1 " in subject for subject in project.subjects()):
        assert time.monotonic() < deadline, "job 1 did not merge"
        time.sleep(0.1)
    loop.kill()
    loop.wait(timeout=10)
    recovered = project.runner("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout.splitlines()[-1] == (
        "recover: iter=2 not kept, changed by work merged since it started: shared.txt"
    ), recovered.stdout
    assert (project.root / "shared.txt").read_text(encoding="utf-8") == "from a\n"
    assert _attempt_file(project, "b", "b.txt") == "b\n"  # on its attempt ref, carried
    assert _attempt_file(project, "b", "shared.txt") == "from a\n"  # onto the head
    assert not (project.root / "b.txt").exists()
    assert project.status() == ""
