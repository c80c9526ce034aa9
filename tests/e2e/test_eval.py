"""`runner eval` end to end: real runs of the shipped example cases with the scripted command
agent, the summary as text, JSON (of its schema) and HTML, a prompt variant that changes what
the agent receives, bad cases refused in one line, and an interrupted eval resumed without
repeating a finished run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers import ROOT
from tests.helpers.e2e import PYTHON

EXAMPLES = ROOT / "examples" / "eval"
CASES = sorted(EXAMPLES.glob("*.toml"))
RESULT_FILES = {"meta.json", "checks.json", "tree.json", "history.json", "loop.log", "git-log.txt"}


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


def run_eval(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "runner_shell", "eval", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tiny_case(
    directory: Path, case_id: str = "tiny", guard: str = "test -f done.txt", extra: str = ""
) -> Path:
    """A case that takes two quick iterations: a decomposition, then one file written."""
    (directory / "project").mkdir(parents=True)
    (directory / "project" / "README.md").write_text("A tiny project.\n")
    (directory / "solution").mkdir()
    (directory / "solution" / "done.txt").write_text("done\n")
    shutil.copy(EXAMPLES / "scripted_agent.py", directory / "scripted_agent.py")
    script = {
        "summary": "One task.",
        "children": [
            {
                "title": "Write done.txt",
                "goal": "Write it.",
                "acceptance": ["it exists"],
                "next": "execute",
            }
        ],
        "steps": [{"title": "Write done.txt", "files": "solution"}],
    }
    (directory / "script.json").write_text(json.dumps(script))
    path = directory / f"{case_id}.toml"
    path.write_text(
        f"""[case]
id = "{case_id}"
goal = "Write done.txt."
project = "project"
max_iterations = 4
{extra}
[config.guard]
command = ["sh", "-c", "{guard}"]

[config.agent]
command = ["python3", "{{case_dir}}/scripted_agent.py", "{{case_dir}}"]

[[checks]]
kind = "file_exists"
path = "done.txt"

[[checks]]
kind = "runner_completed"
"""
    )
    return path


def _schema(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "schemas" / name).read_text())  # type: ignore[no-any-return]


def check_results(root: Path, document: dict[str, Any], runs: int) -> None:
    jsonschema.validate(document, _schema("eval_summary.schema.json"))
    assert json.loads((root / "summary.json").read_text()) == document
    for row in document["rows"]:
        assert row["runs"] == runs
        variant = root / row["case"] / f"{row['backend']}+{row['prompts']}"
        for number in range(1, runs + 1):
            assert {path.name for path in (variant / str(number)).iterdir()} == RESULT_FILES


def test_the_shipped_cases_succeed_with_the_scripted_agent(tmp_path: Path) -> None:
    """Every example once, two at a time: the default suite's bounded size (the full
    `--runs 3` is the campaign below)."""
    assert len(CASES) >= 4
    result = run_eval(
        tmp_path, *map(str, CASES), "--backend", "command", "--jobs", "2", "--id", "ci"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    finished = [line for line in lines if line.startswith("eval: [")]
    assert len(finished) == len(CASES)
    assert all("outcome=success" in line for line in finished), finished
    header = next(line for line in lines if line.startswith("case "))
    assert "success" in header and "95% interval" in header and "cost_usd" in header
    root = tmp_path / "eval-results" / "ci"
    document = json.loads((root / "summary.json").read_text())
    check_results(root, document, 1)
    assert [row["case"] for row in document["rows"]] == sorted(
        ["calculator-cli", "strings-node", "wordcount-go", "invoice-refactor"]
    )
    assert all(row["success_rate"] == 1 for row in document["rows"])
    html = (root / "summary.html").read_text()
    assert '<table id="summary">' in html and '<svg id="plot"' in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    # The calculator's first attempt failed its guard: the evidence says so.
    calculator = root / "calculator-cli" / "command+builtin" / "1"
    assert "guard=fail" in (calculator / "loop.log").read_text()
    history = json.loads((calculator / "history.json").read_text())
    assert [item["guard"] for item in history["iterations"]] == ["skipped", "fail", "pass"]
    assert not list(Path("/tmp").glob(f"runner-eval-calculator-cli-*/repo/{calculator.name}"))


@pytest.mark.campaign
def test_the_done_when_command_runs_three_times_each(tmp_path: Path) -> None:
    """`runner eval examples/eval/*.toml --backend command --runs 3` (the issue's command)."""
    result = run_eval(
        tmp_path,
        *map(str, CASES),
        "--backend",
        "command",
        "--runs",
        "3",
        "--jobs",
        "2",
        "--id",
        "full",
        "--json",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    check_results(tmp_path / "eval-results" / "full", document, 3)
    assert all(row["outcomes"]["success"] == 3 for row in document["rows"])


def test_a_prompt_variant_changes_what_the_agent_receives(tmp_path: Path) -> None:
    case = tiny_case(tmp_path / "case")
    variant = tmp_path / "terse"
    variant.mkdir()
    (variant / "executor.md.j2").write_text("TERSE: {{ node.title }}\n\n{{ output }}")
    result = run_eval(
        tmp_path, str(case), "--prompts", str(variant), "--keep", "--id", "p", "--json"
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [(row["prompts"], row["outcomes"]["success"]) for row in document["rows"]] == [
        ("terse", 1)
    ]
    run = tmp_path / "eval-results" / "p" / "tiny" / "command+terse" / "1"
    meta = json.loads((run / "meta.json").read_text())
    workspace = Path(meta["workspace"])
    try:
        history = json.loads((run / "history.json").read_text())
        executor = next(item for item in history["iterations"] if item["role"] == "executor")
        decomposer = next(item for item in history["iterations"] if item["role"] == "decomposer")
        assert len(executor["prompt_template"]) == 64 and "prompt_template" not in decomposer
        sent = workspace / ".runner" / "iterations" / executor["run_id"] / "2" / "prompt.md"
        assert sent.read_text().startswith("TERSE: Write done.txt\n\n## Output contract\n")
    finally:
        shutil.rmtree(workspace.parent)


def test_each_way_a_run_can_end_is_its_outcome(tmp_path: Path) -> None:
    cases = [
        tiny_case(tmp_path / "stuck", "stuck", guard="false"),
        tiny_case(tmp_path / "limit", "limit", extra="max_iterations = 1\n"),
        tiny_case(tmp_path / "fail", "fail", guard="true"),
        tiny_case(tmp_path / "error", "error", extra="timeout_secs = 0.001\n"),
    ]
    fail = cases[2].read_text().replace('path = "done.txt"', 'path = "missing.txt"')
    cases[2].write_text(fail)
    limit = cases[1].read_text().replace("max_iterations = 4\n", "", 1)
    cases[1].write_text(limit)
    result = run_eval(tmp_path, *map(str, cases), "--jobs", "4", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    outcomes = {run["case"]: run["outcome"] for run in document["runs"]}
    assert outcomes == {"stuck": "stuck", "limit": "limit", "fail": "fail", "error": "error"}
    row = {row["case"]: row for row in document["rows"]}
    assert row["fail"]["outcomes"]["fail"] == 1 and row["fail"]["success_rate"] == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[case]\ngoal = "g"\nproject = "p"\n[[checks]]\nkind = "runner_completed"\n',
            "case: must contain ['id'] properties",
        ),
        (
            '[case]\nid = "x"\ngoal = "g"\nproject = "p"\n[[checks]]\nkind = "file_exist"\n',
            "checks[0].kind: must be one of",
        ),
        (
            '[case]\nid = "x"\ngoal = "g"\nproject = "p"\n[[checks]]\nkind = "tests_pass"\n'
            'command = ["true"]\n',
            "checks[0].pattern: missing",
        ),
        (
            '[case]\nid = "x"\ngoal = "g"\nproject = "p"\ncolour = 1\n[[checks]]\n'
            'kind = "runner_completed"\n',
            "case: must not contain {'colour'} properties",
        ),
        (
            '[case]\nid = "x"\ngoal = "g"\nproject = "nowhere"\n[[checks]]\n'
            'kind = "runner_completed"\n',
            "case.project: nowhere is not a directory",
        ),
        (
            '[case]\nid = "x"\ngoal = "g"\nproject = "p"\n[config]\nmax_iteration = 3\n'
            '[[checks]]\nkind = "runner_completed"\n',
            "config: max_iteration",
        ),
        ("[case\n", "is not TOML"),
    ],
)
def test_a_bad_case_is_one_line_naming_the_field(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "bad.toml").write_text(text)
    result = run_eval(tmp_path, "bad.toml")
    assert result.returncode == 1, result.stdout
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("runner: eval: bad.toml: ")
    assert expected in result.stderr, result.stderr
    assert not (tmp_path / "eval-results").exists()


def test_an_interrupted_eval_resumes_without_repeating_a_finished_run(tmp_path: Path) -> None:
    case = tiny_case(tmp_path / "case")
    args = [PYTHON, "-m", "runner_shell", "eval", str(case), "--runs", "2", "--id", "r"]
    process = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    variant = tmp_path / "eval-results" / "r" / "tiny" / "command+builtin"
    deadline = time.monotonic() + 120
    # Interrupted once run 1 has finished and run 2 has begun (its directory is made).
    while not ((variant / "1" / "meta.json").exists() and (variant / "2").is_dir()):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted after" in err and "--resume --id r" in err
    finished = {
        run.name: (run / "meta.json").stat().st_mtime_ns
        for run in variant.iterdir()
        if (run / "meta.json").exists()
    }
    assert list(finished) == ["1"]  # run 2 was under way: its directory has no meta.json
    assert (variant / "2").is_dir() and not (variant / "2" / "meta.json").exists()
    resumed = run_eval(tmp_path, str(case), "--runs", "2", "--resume", "--id", "r")
    assert resumed.returncode == 0, resumed.stderr
    before = [line for line in resumed.stdout.splitlines() if "(finished before)" in line]
    assert len(before) == len(finished)
    assert len([line for line in resumed.stdout.splitlines() if line.startswith("eval: [")]) == 2
    for name, mtime in finished.items():  # not run again
        assert (variant / name / "meta.json").stat().st_mtime_ns == mtime
    summary = json.loads((tmp_path / "eval-results" / "r" / "summary.json").read_text())
    assert summary["rows"][0]["runs"] == 2 and summary["rows"][0]["outcomes"]["success"] == 2


def test_compare_puts_two_result_sets_side_by_side(tmp_path: Path) -> None:
    def summary(rate: float, cost: float) -> dict[str, Any]:
        row = {
            "case": "c",
            "backend": "command",
            "prompts": "builtin",
            "success_rate": rate,
            "cost_usd": cost,
        }
        return {"eval_id": "x", "rows": [row], "runs": []}

    for name, rate, cost in (("a", 0.5, 1.0), ("b", 1.0, 0.5)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary(rate, cost)))
    result = run_eval(tmp_path, "--compare", "a", "b")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split() == [
        "c",
        "command",
        "builtin",
        "50%",
        "100%",
        "+50",
        "pts",
        "1.0000",
        "0.5000",
    ]
    missing = run_eval(tmp_path, "--compare", "a", "nowhere")
    assert missing.returncode == 1 and "eval: --compare nowhere: cannot be read" in missing.stderr
