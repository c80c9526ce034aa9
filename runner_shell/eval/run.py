"""One eval run: a fresh workspace, a real `runner init` + `start` + `loop`, the checks, and
everything kept under eval-results/<eval-id>/<case>/<variant>/<n>/.

The workspace is a temporary copy (or clone) of the case's project, removed after unless
`keep`. meta.json is written last and atomically: a run directory without one is unfinished
(interrupted), and `--resume` runs it again; one with it is never repeated.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from runner_core.eval.summary import classify
from runner_core.run.config import ConfigError, parse_config, render_config
from runner_shell.errors import UserFacingError
from runner_shell.eval.case import Case
from runner_shell.store.files import atomic_write_text

IDENTITY = ("-c", "user.name=runner eval", "-c", "user.email=eval@runner.invalid")
CHECK_TIMEOUT_SECS = 120.0
LOOP_END = re.compile(r"^loop: status=(\w+)", re.MULTILINE)
# How `runner loop`'s last line reads as the run's end: a budget stops it as the limit does.
LOOP_STATUSES = {"complete": "complete", "stuck": "stuck", "limit": "limit", "budget": "limit"}


@attrs.frozen(slots=True)
class Variant:
    """One backend and one prompt variant (a directory of templates, or the built-in prompt)."""

    backend: str
    prompts: Path | None

    @property
    def prompts_name(self) -> str:
        return "builtin" if self.prompts is None else self.prompts.name

    @property
    def name(self) -> str:
        return f"{self.backend}+{self.prompts_name}"


class Processes:
    """The process groups of the runs under way, so an interrupt ends them all (and only them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self.stopping = False

    def run(
        self, argv: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None = None
    ) -> tuple[int | None, str]:
        """`argv` in `cwd`, stdout and stderr together; exit None when it timed out."""
        if self.stopping:
            raise KeyboardInterrupt
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env or os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with self._lock:
            self._groups.add(process.pid)
        try:
            out, _ = process.communicate(timeout=timeout)
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            out, _ = process.communicate()
            code = None
        finally:
            with self._lock:
                self._groups.discard(process.pid)
        if self.stopping:
            raise KeyboardInterrupt
        return code, out.decode("utf-8", errors="replace")

    def stop(self) -> None:
        """SIGINT each group (the runner finishes its iteration as interrupted), then SIGKILL."""
        self.stopping = True
        with self._lock:
            groups = sorted(self._groups)
        for group in groups:
            _signal_group(group, signal.SIGINT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self._groups:
            time.sleep(0.05)
        with self._lock:
            for group in sorted(self._groups):
                _kill_group(group)


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _kill_group(group: int) -> None:
    _signal_group(group, signal.SIGKILL)


def run_config(case: Case, backend: str) -> dict[str, Any]:
    """config.toml of a run of `case` with `backend`, as parsed TOML: the case's `[config]`,
    its limits, the backend, and the case's directory readable in the sandbox."""
    data = copy.deepcopy(case.config)
    agent = data.setdefault("agent", {})
    agent["backend"] = backend
    if backend != "command":
        agent.pop("command", None)
    if case.max_iterations is not None:
        data["max_iterations"] = case.max_iterations
    if case.max_cost_usd is not None:
        data.setdefault("budget", {})["max_cost_usd"] = case.max_cost_usd
    sandbox = data.setdefault("sandbox", {})
    sandbox["read_only"] = sorted({*sandbox.get("read_only", []), str(case.directory)})
    return data


def check_config(case: Case, backend: str) -> str:
    """The config.toml text of `case` with `backend`; `UserFacingError` naming the field."""
    try:
        return render_config(parse_config(run_config(case, backend)))
    except ConfigError as error:
        raise UserFacingError(f"eval: {case.shown}: config: {error}") from None


def _runner(*args: str) -> list[str]:
    return [sys.executable, "-m", "runner_shell", *args]


def _git(workspace: Path, *args: str) -> None:
    subprocess.run(
        ["git", *IDENTITY, *args], cwd=workspace, check=True, capture_output=True, timeout=120
    )


def make_workspace(case: Case, parent: Path) -> Path:
    """A fresh git repository on `main` holding the case's initial project."""
    workspace = parent / "repo"
    if case.project is not None:
        shutil.copytree(case.project, workspace, symlinks=True)
        _git(workspace, "init", "--quiet")
        _git(workspace, "symbolic-ref", "HEAD", "refs/heads/main")
        _git(workspace, "add", "-A")
        _git(workspace, "commit", "--quiet", "--no-verify", "-m", f"eval: {case.id}'s project")
    else:
        assert case.repo is not None
        subprocess.run(
            ["git", "clone", "--quiet", case.repo, str(workspace)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        _git(workspace, "checkout", "--quiet", "-B", "main", case.commit or "HEAD")
    return workspace


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def run_checks(
    case: Case, workspace: Path, loop_end: str, processes: Processes
) -> list[dict[str, Any]]:
    """Each check's result in the finished workspace: kind, passed, and what it saw."""
    results = []
    for check in case.checks:
        kind = check["kind"]
        result: dict[str, Any] = {"kind": kind}
        if kind == "file_exists":
            target = (workspace / check["path"]).resolve()
            inside = target.is_relative_to(workspace.resolve())
            result |= {"path": check["path"], "passed": inside and target.exists()}
        elif kind == "runner_completed":
            result |= {"passed": loop_end == "complete", "loop_end": loop_end}
        elif kind == "command_succeeds":
            timeout = float(check.get("timeout_secs", CHECK_TIMEOUT_SECS))
            code, out = processes.run(check["command"], workspace, timeout)
            result |= {"command": check["command"], "exit": code, "passed": code == 0}
            result["output"] = out[-2000:]
        else:
            result |= _tests_pass(check, workspace, processes)
        results.append(result)
    return results


def _tests_pass(check: Mapping[str, Any], workspace: Path, processes: Processes) -> dict[str, Any]:
    """Every JUnit test id matching `pattern` passed, and at least one matched."""
    from runner_core.guard.report import TestOutcome
    from runner_shell.guard.junit import GuardReportError, parse_junit

    timeout = float(check.get("timeout_secs", CHECK_TIMEOUT_SECS))
    with tempfile.TemporaryDirectory(prefix="runner-eval-report-") as scratch:
        report = Path(scratch) / "junit.xml"
        env = {**os.environ, "RUNNER_GUARD_REPORT": str(report)}
        code, _ = processes.run(check["command"], workspace, timeout, env)
        found: dict[str, Any] = {"command": check["command"], "exit": code}
        try:
            parsed = parse_junit(report.read_bytes())
        except (OSError, GuardReportError) as error:
            return found | {"passed": False, "problem": f"no JUnit report: {error}"}
    pattern = re.compile(check["pattern"])
    matched = {
        result.id: result.outcome.value for result in parsed.results if pattern.search(result.id)
    }
    failing = sorted(name for name, outcome in matched.items() if outcome != TestOutcome.PASSED)
    return found | {
        "pattern": check["pattern"],
        "matched": len(matched),
        "failing": failing,
        "passed": bool(matched) and not failing,
    }


def _history_figures(history: Mapping[str, Any]) -> tuple[int, int, float]:
    """Iterations, tokens (input + output) and cost of `runner history --json`."""
    iterations = history.get("iterations", [])
    tokens = sum(
        (item["tokens"] or {}).get("input", 0) + (item["tokens"] or {}).get("output", 0)
        for item in iterations
    )
    cost = sum(item["cost_usd"] or 0.0 for item in iterations)
    return len(iterations), tokens, round(cost, 6)


def _attempts(tree_text: str) -> int:
    """Every attempt the tree's nodes used, summed."""
    try:
        tree = json.loads(tree_text)
    except ValueError:
        return 0
    total, stack = 0, [tree]
    while stack:
        node = stack.pop()
        total += int(node.get("attempts", 0))
        stack.extend(node.get("children", []))
    return total


def run_one(
    case: Case,
    variant: Variant,
    number: int,
    out: Path,
    processes: Processes,
    keep: bool = False,
) -> dict[str, Any]:
    """One run of `case` with `variant`, its files in `out`; returns its meta.json."""
    if out.exists():
        shutil.rmtree(out)  # an interrupted run's leftovers
    out.mkdir(parents=True)
    started = time.monotonic()
    parent = Path(tempfile.mkdtemp(prefix=f"runner-eval-{case.id}-"))
    workspace = parent / "repo"
    try:
        loop_end, exit_code, problem, checks, figures = _run_in(
            case, variant, parent, out, processes
        )
    finally:
        if not keep:
            shutil.rmtree(parent, ignore_errors=True)
    iterations, tokens, cost, attempts = figures
    passed = bool(checks) and all(check["passed"] for check in checks)
    meta = {
        "case": case.id,
        "backend": variant.backend,
        "prompts": variant.prompts_name,
        "variant": variant.name,
        "run": number,
        "outcome": classify(loop_end, passed),
        "loop_end": loop_end,
        "loop_exit": exit_code,
        "checks_passed": passed,
        "problem": problem,
        "iterations": iterations,
        "attempts": attempts,
        "tokens": tokens,
        "cost_usd": cost,
        "wall_secs": round(time.monotonic() - started, 3),
        "workspace": str(workspace) if keep else None,
    }
    _write(out / "meta.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def _run_in(
    case: Case, variant: Variant, parent: Path, out: Path, processes: Processes
) -> tuple[str, int | None, str | None, list[dict[str, Any]], tuple[int, int, float, int]]:
    """The run in a workspace under `parent`: how its loop ended, the loop's exit, what went
    wrong (None), the checks' results and the figures of its history."""
    problem: str | None = None
    loop_end, exit_code = "error", None
    try:
        workspace = make_workspace(case, parent)
        setup = _setup(case, variant, workspace, processes)
        if setup is not None:
            problem = setup
            _write(out / "loop.log", setup + "\n")
        else:
            exit_code, log = processes.run(_runner("loop", "--quiet"), workspace, case.timeout_secs)
            _write(out / "loop.log", log)
            ends = LOOP_END.findall(log)
            loop_end = LOOP_STATUSES.get(ends[-1], "error") if ends else "error"
            if exit_code is None:
                loop_end, problem = "error", f"the loop took more than {case.timeout_secs:g} s"
        checks = run_checks(case, workspace, loop_end, processes)
        _write(out / "checks.json", json.dumps(checks, indent=2, sort_keys=True) + "\n")
        return loop_end, exit_code, problem, checks, _keep_evidence(workspace, out, processes)
    except (subprocess.CalledProcessError, OSError) as error:
        _write(out / "checks.json", "[]\n")
        return "error", exit_code, f"workspace: {error}", [], (0, 0, 0.0, 0)


def _setup(case: Case, variant: Variant, workspace: Path, processes: Processes) -> str | None:
    """`runner init`, the case's config, goal and prompts, `runner start`; why not, or None."""
    # An agent command is given so that init writes no template agent: the config below is the
    # run's, the agent the case's.
    init = _runner("init", "--backend", variant.backend, "--agent", "true")
    code, said = processes.run(init, workspace, 120)
    if code != 0:
        return f"runner init failed ({code}): {said.strip()}"
    runner_dir = workspace / ".runner"
    _write(runner_dir / "state" / "config.toml", check_config(case, variant.backend))
    _write(runner_dir / "GOAL.md", case.goal.rstrip("\n") + "\n")
    if variant.prompts is not None:
        shutil.copytree(variant.prompts, runner_dir / "prompts", dirs_exist_ok=True)
    # The workspace is the eval's own throw-away clone: the run works in it in place (`--here`),
    # so the checks see the finished run's files where the case's project is.
    code, said = processes.run(_runner("start", "--here"), workspace, 300)
    if code != 0:
        return f"runner start failed ({code}): {said.strip()}"
    return None


def _keep_evidence(workspace: Path, out: Path, processes: Processes) -> tuple[int, int, float, int]:
    """The final tree, the history, the git log; the run's iterations, tokens, cost, attempts."""
    tree_path = workspace / ".runner" / "state" / "tree.json"
    tree_text = tree_path.read_text(encoding="utf-8") if tree_path.exists() else ""
    _write(out / "tree.json", tree_text)
    code, history_text = processes.run(_runner("history", "--json"), workspace, 120)
    history: dict[str, Any] = {}
    if code == 0:
        try:
            history = json.loads(history_text)
        except ValueError:
            history = {}
    _write(out / "history.json", json.dumps(history, indent=2, sort_keys=True) + "\n")
    _, log = processes.run(
        ["git", "log", "--all", "--format=%H %ad %s", "--date=iso-strict"], workspace, 60
    )
    _write(out / "git-log.txt", log)
    iterations, tokens, cost = _history_figures(history)
    return iterations, tokens, cost, _attempts(tree_text)
