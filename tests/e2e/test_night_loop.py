"""End-to-end: `runner loop` through a night: runner errors, waits, limits, budgets,
the stuck policy, hooks, signals and the event stream, with real git and fake agents."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from runner_core.loop.events import EventType
from tests.helpers import FAKE_CLIS, SCHEMAS
from tests.helpers.e2e import PYTHON, Project, assert_one_error_line, child_spec, lines, node

LEAF = node("root")
DONE = {"status": "done", "summary": "did it"}
SCHEMA = json.loads((SCHEMAS / "events.schema.json").read_text(encoding="utf-8"))


def view_schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / "views" / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


# Short waits keep these tests fast; the defaults are minutes.
FAST = {"runner_error_backoff_secs": [0], "max_wait_secs": 5}


def events(project: Project) -> list[dict[str, Any]]:
    path = project.runner_dir / "iterations" / project.run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def types(project: Project) -> list[str]:
    return [event["type"] for event in events(project)]


def test_an_agent_that_fails_twice_then_succeeds_is_carried_through(project: Project) -> None:
    run = project.prepare(LEAF, loop=FAST)
    project.agent_script({1: {"exit": 5}, 2: {"exit": 5}, 3: {"output": DONE}})

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status=runner_error guard=skipped",
        lines(result.stdout)[1],
        f"loop: step run={run} iter=2 node=root status=runner_error guard=skipped",
        lines(result.stdout)[3],
        f"loop: step run={run} iter=3 node=root status=done guard=pass",
        f"loop: status=complete run={run} steps=3 started_at_iter=1",
    ]
    assert lines(result.stdout)[1].startswith(f"loop: wait run={run} reason=runner_error until=")
    assert lines(result.stdout)[1].endswith(" secs=0")
    assert [project.meta(n)["attempts_after"] for n in (1, 2)] == [0, 0]
    assert types(project).count("runner_error") == 2
    assert types(project)[-1] == "complete"


def test_the_loop_stops_after_max_consecutive_runner_errors(project: Project) -> None:
    run = project.prepare(LEAF, loop={**FAST, "max_consecutive_runner_errors": 2})
    project.agent_script({1: {"exit": 5}, 2: {"exit": 5}})

    result = project.runner("loop")

    assert assert_one_error_line(result) == "runner error: executor agent exited with status 5"
    # The runner error's word, then the loop's own last line.
    assert lines(result.stdout)[-2:] == [
        f"loop: step run={run} iter=2 node=root status=runner_error guard=skipped",
        f"loop: status=runner_error run={run} steps=2 started_at_iter=1"
        " error=executor agent exited with status 5",
    ]
    last = events(project)[-1]
    assert (last["type"], last["consecutive"], last["max_consecutive"]) == ("runner_error", 2, 2)


def test_a_wait_file_is_printed_waited_and_resumed_with_attempts_unchanged(
    project: Project,
) -> None:
    run = project.prepare(LEAF, loop={**FAST, "max_consecutive_runner_errors": 1})
    project.agent_script({1: {"wait": {"retry_after_secs": 2}, "exit": 1}, 2: {"output": DONE}})

    began = time.monotonic()
    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began >= 2
    out = lines(result.stdout)
    assert out[0] == f"loop: step run={run} iter=1 node=root status=rate_limited guard=skipped"
    assert out[1].startswith(f"loop: wait run={run} reason=rate_limited until=")
    assert out[1].endswith(" secs=2")
    assert out[-1] == f"loop: status=complete run={run} steps=2 started_at_iter=1"
    meta = project.meta(1)
    assert meta["attempts_after"] == meta["attempts_before"] == 0
    assert meta["error"].startswith("rate_limited: ")
    limit = next(event for event in events(project) if event["type"] == "limit_reached")
    assert (limit["kind"], limit["retry_after_secs"]) == ("rate_limited", 2)


@pytest.mark.parametrize(
    ("agent", "reason"),
    [
        ({"wait": {"retry_after_secs": 60}, "exit": 1}, "limit_reached"),
        ({"exit": 5}, "runner_error"),
    ],
    ids=["usage_limit", "runner_error"],
)
def test_with_its_max_steps_taken_the_loop_stops_at_once_instead_of_waiting(
    project: Project, agent: dict[str, Any], reason: str
) -> None:
    loop = {"runner_error_backoff_secs": [60], "max_wait_secs": 120}
    run = project.prepare(LEAF, loop=loop)
    project.agent_script({1: agent})

    began = time.monotonic()
    result = project.runner("loop", "--max-steps", "1")

    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 30
    word = "rate_limited" if reason == "limit_reached" else "runner_error"
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status={word} guard=skipped",
        f"loop: status=max-steps run={run} steps=1 started_at_iter=1",
    ]
    assert types(project)[-1] == reason and "waiting" not in types(project)


def _fake_cli_config(project: Project, backend: str) -> None:
    text = project.config_path.read_text(encoding="utf-8")
    start = text.index("[agent]")
    agent = f'[agent]\nbackend = "{backend}"\ncommand = ["{FAKE_CLIS / backend}"]\n'
    project.config_path.write_text(text[:start] + agent, encoding="utf-8")


@pytest.mark.parametrize(
    ("backend", "scenario", "error"),
    [
        ("codex", "usage_limit", "usage_limited: You\u2019ve hit your usage limit. Try again at "),
        ("codex", "retry_limit_429", "rate_limited: exceeded retry limit, last status: 429"),
        ("claude", "five_hour", "usage_limited: You've hit your 5-hour limit \u00b7 resets "),
        ("claude", "overloaded_529", "rate_limited: API Error: 529 Overloaded."),
    ],
)
def test_the_real_usage_limit_output_of_codex_and_claude_is_recognised(
    project: Project, backend: str, scenario: str, error: str
) -> None:
    # The scenario is passed on by name: the environment is an allow-list also unsandboxed.
    project.set_config(sandbox={"env": ["FAKE_CLI_SCENARIO"]})
    _fake_cli_config(project, backend)
    project.commit_setup()
    project.env["FAKE_CLI_SCENARIO"] = scenario

    result = project.runner("step")

    assert assert_one_error_line(result).startswith(f"runner error: {error}")
    meta = project.meta(1)
    assert meta["attempts_after"] == 0 and meta["error"].startswith(error)


@pytest.mark.parametrize(
    ("budget", "usage", "stops_before"),
    [
        ({"max_cost_usd": 1.0}, {"cost_usd": 0.4}, 4),
        ({"max_tokens": 250}, {"input_tokens": 60, "output_tokens": 40}, 4),
        ({"max_wall_secs": 1}, {}, 2),
    ],
)
def test_each_budget_stops_the_loop_at_the_right_iteration(
    project: Project, budget: dict[str, Any], usage: dict[str, Any], stops_before: int
) -> None:
    run = project.prepare(node("root", max_attempts=9), budget=budget)
    sleep = 1.1 if "max_wall_secs" in budget else 0
    project.agent_script({n: {"usage": usage, "sleep": sleep, "output": DONE} for n in range(1, 9)})
    project.guard_script([{"exit": 1}])

    result = project.runner("loop")

    assert result.returncode == 1, result.stderr
    name = next(iter(budget)).removeprefix("max_")
    last = lines(result.stdout)[-1]
    assert last.startswith(f"loop: status=budget run={run} budget={name} spent=")
    assert last.endswith(f"steps={stops_before - 1} started_at_iter=1")
    assert project.run_state()["next_iter"] == stops_before
    assert types(project)[-1] == "budget_exhausted"
    refused = project.runner("step")
    assert assert_one_error_line(refused).startswith(f"budget {name} reached for run {run}: ")


def test_on_stuck_decompose_carries_a_stuck_leaf_to_completion(project: Project) -> None:
    run = project.prepare(node("root", max_attempts=1), loop={"on_stuck": "decompose"})
    split = {"summary": "split", "children": [child_spec("A")]}
    project.agent_script({1: {"output": DONE}, 2: {"output": split}, 3: {"output": DONE}})
    project.guard_script([{"exit": 1}, {"exit": 0}])

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[-1] == f"loop: status=complete run={run} steps=3 started_at_iter=1"
    stuck = [event for event in events(project) if event["type"] == "stuck"]
    assert [event["action"] for event in stuck] == ["decompose"]


def test_the_loop_s_hand_over_to_the_decomposer_is_an_operator_event(project: Project) -> None:
    run = project.prepare(node("root", max_attempts=1), loop={"on_stuck": "decompose"})
    split = {"summary": "split", "children": [child_spec("A")]}
    project.agent_script({1: {"output": DONE}, 2: {"output": split}, 3: {"output": DONE}})
    project.guard_script([{"exit": 1}, {"exit": 0}])

    assert project.runner("loop").returncode == 0
    told = events(project)
    after_stuck = told[[event["type"] for event in told].index("stuck") + 1]
    jsonschema.validate(after_stuck, SCHEMA)
    assert (after_stuck["type"], after_stuck["run_id"], after_stuck["iter"]) == ("operator", run, 2)
    assert after_stuck["command"] == "node decompose"
    assert after_stuck["detail"].startswith("op=decompose node=root")


def _hook(path: Path) -> list[str]:
    code = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read())"
    return [PYTHON, "-c", code, str(path)]


def test_every_hook_fires_once_per_matching_event_with_valid_json(project: Project) -> None:
    heard = {name: project.harness / f"{name}.jsonl" for name in ("iteration", "error", "wait")}
    heard["complete"] = project.harness / "complete.jsonl"
    hooks = {f"on_{name}": _hook(path) for name, path in heard.items()}
    project.prepare(LEAF, loop=FAST, hooks=hooks)
    project.agent_script({1: {"exit": 5}, 2: {"output": DONE}})

    assert project.runner("loop").returncode == 0
    kinds = {"iteration": "iteration_finished", "error": "runner_error", "wait": "waiting"}
    kinds["complete"] = "complete"
    for name, path in heard.items():
        fired = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        expected = [event for event in events(project) if event["type"] == kinds[name]]
        assert fired == expected and fired, name


def test_a_failing_or_hanging_hook_changes_nothing(project: Project) -> None:
    hooks = {
        "on_iteration": [PYTHON, "-c", "import sys; sys.exit('no webhook')"],
        "on_complete": [PYTHON, "-c", "import time; time.sleep(30)"],
    }
    run = project.prepare(LEAF, loop={"hook_timeout_secs": 1}, hooks=hooks)
    project.agent_script({1: {"output": DONE}})

    result = project.runner("loop")

    assert result.returncode == 0
    assert lines(result.stdout) == [
        f"loop: step run={run} iter=1 node=root status=done guard=pass",
        f"loop: status=complete run={run} steps=1 started_at_iter=1",
    ]
    assert lines(result.stderr) == [
        "runner: hook on_iteration failed: exit 1: no webhook (the run goes on)",
        "runner: hook on_complete timed_out: still running after 1s, killed (the run goes on)",
    ]
    failed = [event["hook"] for event in events(project) if event["type"] == "hook_failed"]
    assert failed == ["on_iteration", "on_complete"]


def _start_loop(project: Project, command: str = "loop") -> subprocess.Popen[str]:
    """`runner <command>` in the background."""
    return subprocess.Popen(
        [PYTHON, "-m", "runner_shell", command],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_the_agent_leaves_a_committed_interrupted_iteration(
    project: Project, signum: int, code: int
) -> None:
    run = project.prepare(LEAF)
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    loop = _start_loop(project)
    _wait_for(project.harness / "records" / "1.json")
    loop.send_signal(signum)
    stdout, _stderr = loop.communicate(timeout=30)

    assert loop.returncode == code
    # The loop line and the commit subject say `interrupted`; meta.json keeps `retry`.
    assert lines(stdout) == [
        f"loop: step run={run} iter=1 node=root status=interrupted guard=skipped",
        f"loop: status=interrupted run={run} exit={code}",
    ]
    assert project.subjects()[-1].endswith("node root status=interrupted guard=skipped")
    assert project.meta(1)["status"] == "retry"
    name = signal.Signals(signum).name
    assert project.meta(1)["error"] == f"interrupted by {name}"
    assert project.meta(1)["attempts_after"] == 0
    assert project.status() == ""
    assert project.runner("recover").stdout.strip() == "recover: status=clean"


def test_events_validate_against_the_schema(project: Project) -> None:
    project.prepare(LEAF, loop=FAST)
    project.agent_script(
        {
            1: {"exit": 5},
            2: {"wait": {"retry_after_secs": 0}, "exit": 1},
            3: {"output": DONE, "stdout": "working\n"},
        }
    )

    assert project.runner("loop").returncode == 0
    seen = events(project)
    for event in seen:
        jsonschema.validate(event, SCHEMA)
    # fallback: tests/e2e/test_parallel_fallback.py validates its event.
    not_in_this_run = {"stuck", "budget_exhausted", "operator", "hook_failed", "paused", "question"}
    not_in_this_run.add("fallback")
    assert {event["type"] for event in seen} == {kind.value for kind in EventType} - not_in_this_run


def test_follow_shows_a_loop_running_in_another_process_and_its_live_output(
    project: Project,
) -> None:
    run = project.prepare(LEAF, loop=FAST)
    project.agent_script(
        {1: {"exit": 5}, 2: {"stdout": "halfway there\n", "sleep": 3, "output": DONE}}
    )
    loop = _start_loop(project)
    _wait_for(project.harness / "records" / "2.json")
    log = project.iter_dir(2) / "executor.log"
    _wait_for(log)
    deadline = time.monotonic() + 10
    while "halfway there" not in log.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "executor.log did not grow while the agent ran"
        time.sleep(0.05)
    status = project.runner("status")
    assert "running: iter=2 node=root role=executor phase=running elapsed=" in status.stdout
    assert "  | halfway there" in lines(status.stdout)

    followed = project.runner("follow", timeout=30)
    loop.communicate(timeout=30)

    assert followed.returncode == 0, followed.stderr
    shown = lines(followed.stdout)
    assert f"loop: step run={run} iter=1 node=root status=runner_error guard=skipped" in shown
    assert "  | halfway there" in shown
    assert shown[-1] == f"loop: status=complete run={run} steps=2"
    assert "=== stdout ===" in log.read_text(encoding="utf-8")
    raw = project.runner("follow", "--json", "--run", run)
    assert [json.loads(line) for line in lines(raw.stdout)] == events(project)


def test_status_and_report_show_spent_vs_limit_and_subtree_totals(project: Project) -> None:
    tree = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
    project.prepare(tree, budget={"max_cost_usd": 5.0})
    usage = {"cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}
    project.agent_script({n: {"usage": usage, "output": DONE} for n in (1, 2)})

    assert project.runner("loop").returncode == 0

    assert "budget: cost_usd spent=0.5 limit=5" in lines(project.runner("status").stdout)
    report = lines(project.runner("report").stdout)
    assert "budget: cost_usd spent=0.5 limit=5" in report
    assert (
        "  root executions=2 attempts=0 duration=" in "\n".join(report)
        and "tokens=30 cost_usd=0.5" in report[report.index("subtree totals:") + 1]
    )
    spent = [{"budget": "cost_usd", "spent": 0.5, "limit": 5, "exhausted": False}]
    status = json.loads(project.runner("status", "--json").stdout)
    jsonschema.validate(status, view_schema("status"))
    assert status["budgets"] == spent
    document = json.loads(project.runner("report", "--json").stdout)
    jsonschema.validate(document, view_schema("report"))
    assert document["budgets"] == spent
    root, first, second = document["subtree_totals"]
    assert (root["node_id"], first["node_id"], second["node_id"]) == ("root", "root.1", "root.2")
    assert (root["executions"], root["tokens"], root["cost_usd"]) == (
        2,
        {"input": 20, "output": 10, "cached": 0},
        0.5,
    )
    assert (first["executions"], first["cost_usd"]) == (1, 0.25)


def test_a_node_command_is_an_operator_event_of_the_run(project: Project) -> None:
    run = project.prepare(LEAF)

    assert project.runner("node", "retry", "root", "--attempts", "2").returncode == 0

    (event,) = events(project)
    jsonschema.validate(event, SCHEMA)
    assert (event["type"], event["run_id"], event["iter"], event["node_id"]) == (
        "operator",
        run,
        1,
        "root",
    )
    assert event["command"] == "node retry" and event["detail"].startswith("op=retry node=root")


def test_sigterm_during_a_step_commits_the_interrupted_iteration_and_exits_143(
    project: Project,
) -> None:
    project.prepare(LEAF)
    project.agent_script({1: {"sleep": 30, "output": DONE}})
    step = _start_loop(project, "step")
    _wait_for(project.harness / "records" / "1.json")
    step.send_signal(signal.SIGTERM)
    _out, err = step.communicate(timeout=30)

    assert step.returncode == 143
    assert lines(err) == ["runner: runner error: interrupted by SIGTERM"]
    assert project.meta(1)["error"] == "interrupted by SIGTERM"
    assert project.status() == ""


def test_ctrl_c_during_a_wait_ends_the_loop_at_once(project: Project) -> None:
    run = project.prepare(LEAF, loop={"runner_error_backoff_secs": [60]})
    project.agent_script({1: {"exit": 5}})
    loop = _start_loop(project)
    _wait_for(project.iter_dir(1) / "meta.json")
    time.sleep(1)
    began = time.monotonic()
    loop.send_signal(signal.SIGINT)
    stdout, _ = loop.communicate(timeout=30)

    assert loop.returncode == 130 and time.monotonic() - began < 10
    assert lines(stdout)[-1] == f"loop: status=interrupted run={run} exit=130"
    assert project.status() == ""
