"""`runner start` in ratchet mode: the guard run once on the start commit, its report kept as
that commit's baseline, so the first executor's done is judged without measuring it again.

Runs the guard as an iteration runs it (in the scratch checkout, sandboxed, with its deadline)
and resets the checkout after it. A baseline that cannot be measured here is no failure of
`start`: its line says why, and the first executor iteration measures it (README, "Designing
guards").
"""

from __future__ import annotations

import os

from runner_core.guard.report import TestOutcome, TestReport
from runner_core.iteration.guard_stage import BASELINE_REPORT, MISSING_REPORT
from runner_core.run.config import RATCHET, Config
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import GitError, Repo
from runner_shell.guard.baselines import (
    checkout_paths,
    discard_report,
    keep_baseline,
    known_baseline,
    take_report,
)
from runner_shell.sandbox.processes import SpawnError, run_process
from runner_shell.scratch.slots import SlotError, prepare_slot, step_sandbox
from runner_shell.store.files import make_directory
from runner_shell.store.layout import RunnerPaths

# Beside the slots, out of every agent's reach: the start guard's log and report.
START_GUARD_DIR = "runner/start-guard"


def start_baseline(paths: RunnerPaths, repo: Repo, config: Config, run_id: str) -> str | None:
    """The line `runner start` adds in ratchet mode (None otherwise, or when the start
    commit's baseline is already known)."""
    if config.guard_mode != RATCHET:
        return None
    head = repo.head_sha()
    if known_baseline(repo, head) is not None:
        return None
    try:
        report, problem = _measure(paths, repo, config, run_id, head)
    except (UserFacingError, SlotError, GitError, SpawnError, OSError) as error:
        return f"start: baseline not measured ({error}); the first step measures it"
    if report is None:
        return f"start: baseline not measured: {problem or MISSING_REPORT}"
    keep_baseline(repo, head, report)
    return f"start: baseline {_figures(report)}"


def _measure(
    paths: RunnerPaths, repo: Repo, config: Config, run_id: str, head: str
) -> tuple[TestReport | None, str | None]:
    sandbox = step_sandbox(paths, repo, config)
    inputs = config.sandbox.setup_inputs
    slot = prepare_slot(repo, head, config.sandbox.setup, sandbox=sandbox, inputs=inputs)
    work = repo.common_path(START_GUARD_DIR)
    make_directory(work)
    report_path = work / BASELINE_REPORT
    discard_report(report_path)
    env = sandbox.guard_env(
        {**os.environ, "RUNNER_RUN_ID": run_id, "RUNNER_GUARD_REPORT": str(report_path)}
    )
    argv = config.guard_command
    run_process(
        argv,
        cwd=slot,
        env=env,
        stdin_path=None,
        timeout_secs=config.iteration_timeout_secs,
        log_path=work / "guard.log",
        limit_bytes=config.guard_output_limit_bytes,
        confinement=sandbox.confine(argv, slot, work, config.guard_network, "guard"),
    )
    found = take_report(report_path, checkout_paths(slot, sandbox.status.bwrap is not None))
    # What the guard left goes.
    prepare_slot(repo, head, config.sandbox.setup, sandbox=sandbox, inputs=inputs)
    return found


def _figures(report: TestReport) -> str:
    passed = len(report.ids_with(TestOutcome.PASSED))
    total = len(report.results)
    return f"tests={passed}/{total} ({total - passed} not passing at the start)"
