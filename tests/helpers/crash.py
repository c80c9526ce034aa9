"""What the crash-safety and hostile-input suites share: runners started, killed and checked.

`cli` and `spawn` run the real CLI (`python -m runner_shell`) in a project with extra
environment, e.g. RUNNER_TEST_CRASH_AT, the test-only hook that makes the runner SIGKILL itself
at a named point of an iteration (runner_shell.step.lock_and_journal.crash_point).
`assert_state_valid`
reads every runner-owned file back through runner_core, as the next runner would.
"""

from __future__ import annotations

import json
import subprocess
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner_core import Node, parse_config, parse_tree
from runner_core.history.records import record_from_meta
from runner_core.iteration.recovery import Journal, journal_from_json
from runner_core.run.state import run_state_from_json
from tests.helpers.e2e import PYTHON, Project

# Crash points of an iteration, in the order a step passes them (see lock_and_journal.crash_point).
CRASH_POINTS = {
    "before-agent": "running",
    "during-agent": "running+1",
    "during-guard": "running+2",
    "while-writing": "writing",
    "before-commit": "committing",
    "after-commit": "committed",
}
# Files that describe a run; a hostile input that is refused must leave each byte-identical.
STATE_FILES = (
    ".runner/GOAL.md",
    ".runner/.gitignore",
    ".runner/state/tree.json",
    ".runner/state/run_state.json",
    ".runner/state/config.toml",
    ".runner/state/schema.json",
)


def cli(
    project: Project,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real CLI, run to its end, with `env` added to the project's environment."""
    return subprocess.run(
        [PYTHON, "-m", "runner_shell", *args],
        cwd=cwd or project.root,
        env={**project.env, **(env or {})},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


def spawn(
    project: Project, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """The real CLI started in the background; the caller waits for it or kills it."""
    return subprocess.Popen(
        [PYTHON, "-m", "runner_shell", *args],
        cwd=project.root,
        env={**project.env, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )


def journal_file(project: Project) -> Path:
    return project.root / ".git" / "runner-journal.json"


def read_journal(project: Project) -> Journal | None:
    try:
        text = journal_file(project).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return journal_from_json(json.loads(text))


def wait_for_processes(project: Project, count: int, timeout: float = 30) -> Journal:
    """The journal once it names `count` process groups (the agent, then the guard) running:
    the run's, or with `[parallel] slots` the first job's that does (docs/parallel.md)."""
    give_up_at = time.monotonic() + timeout
    while time.monotonic() < give_up_at:
        jobs = sorted((project.root / ".git" / "runner-jobs").glob("*.json"))
        for path in [journal_file(project), *jobs]:
            try:
                journal = journal_from_json(json.loads(path.read_text(encoding="utf-8")))
            except (FileNotFoundError, ValueError):  # not yet, or between write and rename
                continue
            if len(journal.process_groups) >= count:
                return journal
        time.sleep(0.02)
    raise AssertionError(f"no journal naming {count} process group(s) after {timeout} s")


def state_bytes(project: Project) -> dict[str, bytes | None]:
    """The bytes of every state file (None when absent) and of HEAD's sha."""
    files: dict[str, bytes | None] = {}
    for name in STATE_FILES:
        path = project.root / name
        files[name] = path.read_bytes() if path.exists() else None
    head = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
        cwd=project.root,
        capture_output=True,
        check=False,
    )
    files["HEAD"] = head.stdout
    return files


def assert_state_valid(project: Project) -> Node:
    """Every runner-owned file parses and validates; returns the tree."""
    state_dir = project.root / ".runner" / "state"
    tree = parse_tree((state_dir / "tree.json").read_bytes())
    run_state = run_state_from_json(json.loads((state_dir / "run_state.json").read_bytes()))
    parse_config(tomllib.loads((state_dir / "config.toml").read_text(encoding="utf-8")))
    assert run_state.run_id is not None
    run_dir = project.root / ".runner" / "iterations" / run_state.run_id
    for meta in run_dir.glob("*/meta.json") if run_dir.is_dir() else ():
        record = record_from_meta(json.loads(meta.read_bytes()))
        assert str(record.iteration) == meta.parent.name, meta
    return tree


def attempts(tree: Node) -> dict[str, int]:
    """Every node's attempts, by id."""
    found: dict[str, int] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        found[node.id] = node.attempts
        stack.extend(node.children)
    return found


def git_subjects(project: Project) -> list[str]:
    return project.git("log", "--reverse", "--format=%s").splitlines()


def one_error_line(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The single stderr line of a failed command, without its `runner: ` prefix."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("runner: "), result.stderr
    return result.stderr.rstrip("\n").removeprefix("runner: ")


def json_of(value: Any) -> str:
    return json.dumps(value, indent=2) + "\n"
