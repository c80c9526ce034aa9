"""Scenarios of the end-to-end suite where a loop with `[parallel] slots` did not end as the
one-slot loop does: each is the smallest run that showed it, kept so it stays fixed (the budget
one pins the documented bound instead: the jobs already running when a budget is reached).

The one-slot counterpart of each is named in its docstring; these set `[parallel] slots`
themselves, whatever RUNNER_TEST_SLOTS says.
"""

from __future__ import annotations

import json
import signal
import time

from runner_core.iteration.recovery import Journal, JournalPhase, journal_from_json, journal_to_json
from runner_core.run.questions import QUESTIONS_HEADER
from tests.helpers.crash import spawn, wait_for_processes
from tests.helpers.e2e import PYTHON, Project, lines, node

DONE = {"status": "done", "summary": "did it"}
TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])


def test_a_question_asked_by_a_parallel_job_fires_on_question(project: Project) -> None:
    """As test_steering's questions scenario, with two slots: a job's new question fires the
    `on_question` hook once its iteration has merged, as a one-slot step's does."""
    seen = project.harness / "question.json"
    hook = [PYTHON, "-c", f"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())"]
    project.prepare(TWO_LEAVES, hooks={"on_question": hook}, parallel={"slots": 2})
    asked = QUESTIONS_HEADER + "- Which database?\n"
    project.agent_script_by_node(
        {
            ("root.1", 1): {"files": {".runner/state/questions.md": asked}, "output": DONE},
            ("root.2", 1): {"output": DONE},
        }
    )

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    events = (project.iter_dir(1).parent / "events.jsonl").read_text(encoding="utf-8")
    types = [json.loads(line)["type"] for line in events.splitlines()]
    assert "question" in types
    event = json.loads(seen.read_text(encoding="utf-8"))
    assert (event["type"], event["questions"]) == ("question", "- Which database?\n")


def _iterations_of(project: Project, node_id: str) -> list[int]:
    """The iterations whose agent ran on `node_id`, in order, from the fake agent's records."""
    found = []
    for path in (project.harness / "records").glob("*.json"):
        env = json.loads(path.read_text(encoding="utf-8"))["env"]
        if env["RUNNER_NODE_ID"] == node_id:
            found.append(int(env["RUNNER_ITER"]))
    return sorted(found)


def test_the_retry_of_a_parallel_job_whose_guard_failed_gets_failure_md(project: Project) -> None:
    """As test_cli_loop's failure.md scenario, with two slots: root.1's guard fails in iteration
    1 while root.2 still runs as iteration 2, so root.1's next attempt is iteration 3; its agent
    must get iteration 1's guard.log as failure.md, as a one-slot retry does."""
    project.prepare(TWO_LEAVES, parallel={"slots": 2})
    project.agent_script_by_node(
        {
            ("root.1", 1): {"files": {"a.txt": "wrong\n"}, "output": DONE},
            ("root.1", 2): {"files": {"a.txt": "A\n"}, "output": DONE},
            ("root.2", 1): {"sleep": 3, "output": DONE},
        }
    )
    project.guard_script_by_iteration({1: {"exit": 1, "stdout": "a.txt is wrong\n"}}, default={})

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    first, retry = _iterations_of(project, "root.1")
    guard_log = (project.iter_dir(first) / "guard.log").read_text(encoding="utf-8")
    assert "a.txt is wrong" in guard_log
    assert project.record(retry)["context"].get("failure.md") == guard_log


def _wait_for_agents_of_both_jobs(project: Project, timeout: float = 30) -> None:
    """Until the journals of jobs 1 and 2 each name their agent: the first may start alone."""
    give_up_at = time.monotonic() + timeout
    while time.monotonic() < give_up_at:
        groups = []
        for path in sorted((project.root / ".git" / "runner-jobs").glob("*.json")):
            try:
                journal = journal_from_json(json.loads(path.read_text(encoding="utf-8")))
            except (FileNotFoundError, ValueError):  # between the write and the rename
                continue
            groups.append(len(journal.process_groups))
        if len(groups) == 2 and min(groups) >= 1:
            return
        time.sleep(0.02)
    raise AssertionError(f"both jobs' agents not running after {timeout} s")


def test_status_after_kill_9_of_a_parallel_loop_says_interrupted(project: Project) -> None:
    """As test_cli_runs_and_status's kill -9 scenario, with two slots: `status` names the
    interrupted iteration and says to run `runner recover`, which step and loop require."""
    project.prepare(TWO_LEAVES, parallel={"slots": 2})
    slow = {"sleep": 30, "output": DONE}
    project.agent_script_by_node({("root.1", 1): slow, ("root.2", 1): slow})
    loop = spawn(project, "loop")
    wait_for_processes(project, 1)
    _wait_for_agents_of_both_jobs(project)
    loop.send_signal(signal.SIGKILL)
    loop.wait()
    assert project.runner("step").returncode != 0  # refused until `runner recover`

    document = json.loads(project.runner("status", "--json").stdout)

    assert document["interrupted"] is not None
    out = lines(project.runner("status").stdout)
    interrupted = [line for line in out if line.startswith("status: interrupted")]
    # One line per job the kill left, each with the way on.
    assert [line.split()[3] for line in interrupted] == ["node=root.1", "node=root.2"]
    assert all("run 'runner recover'" in line for line in interrupted)
    assert project.runner("recover").returncode == 0


def test_a_budget_is_overspent_by_no_more_than_the_jobs_running_when_it_is_reached(
    project: Project,
) -> None:
    """As test_watching's budget scenario, with four slots: six leaves at 0.25 USD each and a
    0.5 USD budget. One slot stops after two iterations (spent 0.5). Four slots start four jobs
    before any spend is known; once the first one's is, the three still running count at its
    mean, the budget is reached and no fifth starts: 1.0 spent, the jobs that were running."""
    costly = {"usage": {"cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}, "output": DONE}
    six_leaves = node("root", children=[node(f"root.{n}", order=n) for n in range(1, 7)])
    run = project.prepare(six_leaves, budget={"max_cost_usd": 0.5}, parallel={"slots": 4})
    project.agent_script({n: costly for n in range(1, 7)})

    result = project.runner("loop")

    assert result.returncode == 1, result.stderr
    assert lines(result.stdout)[-1] == (
        f"loop: status=budget run={run} budget=cost_usd spent=1 limit=0.5 steps=4 started_at_iter=1"
    )


def test_recover_never_clears_the_journal_of_a_job_the_run_went_past_without_its_commit(
    project: Project,
) -> None:
    """A job's journal left behind an iteration the run is past, with no commit of that
    iteration: the job is unaccounted for, and `recover` says so instead of `status=clean`."""
    project.prepare(TWO_LEAVES, parallel={"slots": 2})
    project.agent_script_by_node({("root.1", 1): {"output": DONE}})
    assert project.runner("step").returncode == 0
    # The iteration's commit gone, its state kept: the run says it is past iteration 1.
    project.git("reset", "--soft", "HEAD~1")
    project.commit_setup("the iteration's commit replaced by hand")
    journal = Journal(
        run_id=project.run_id,
        iteration=1,
        node_id="root.1",
        role="executor",
        phase=JournalPhase.RUNNING,
        started_at="2026-01-01T00:00:00Z",
        runner_pid=0,
        command="runner loop",
    )
    jobs = project.root / ".git" / "runner-jobs"
    jobs.mkdir(exist_ok=True)
    (jobs / "1.json").write_text(json.dumps(journal_to_json(journal)), encoding="utf-8")

    recovered = project.runner("recover")

    assert recovered.returncode != 0
    assert "status=clean" not in recovered.stdout
    [line] = lines(recovered.stderr)
    assert "iteration 1 of run" in line and "has a job journal" in line, line
    assert (jobs / "1.json").is_file()
