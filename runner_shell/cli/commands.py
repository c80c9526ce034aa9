"""The bodies of `runner select`, `runner validate` and `runner step`, free of typer.

Each prints its seed-002 lines through `echo` and returns its exit code; `failure_of` says
what any error they raise is printed as. The typer commands in cli.py and the launcher's fast
path (entry.py) both run these, so the two can never print different bytes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runner_core.run.exit_codes import ExitCode
from runner_shell.errors import UserFacingError, exit_for_closed_stdout, os_error_message
from runner_shell.git.repo import GitError, Repo, open_repo
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import MissingStateFile

if TYPE_CHECKING:
    from runner_core.iteration.recovery import Journal
    from runner_core.run.state import RunState
    from runner_core.tree.selection import Selection, StuckLeaf

Echo = Callable[[str], None]


def failure_of(error: BaseException) -> tuple[str, int] | None:
    """The message and exit code of an error a user can cause; None to let it propagate.

    A closed stdout is no error to report: the process ends quietly here (exit 141).
    """
    if isinstance(error, BrokenPipeError):
        exit_for_closed_stdout()
    if isinstance(error, MissingStateFile):
        return missing_file_message(error), 1
    if isinstance(error, UserFacingError):
        return str(error), error.exit_code
    if isinstance(error, GitError):
        return str(error), ExitCode.ERROR
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", ExitCode.INTERRUPTED
    if isinstance(error, OSError):
        message = os_error_message(error)
        return None if message is None else (message, ExitCode.ERROR)
    return None


def stderr_line(line: str) -> None:
    """A line on stderr, at once: a notice that must come before the command's own output."""
    print(line, file=sys.stderr, flush=True)


def missing_file_message(error: MissingStateFile) -> str:
    """A missing state file git still has is restored with git, not re-initialised."""
    from runner_core.iteration.preconditions import missing_state_file_problem

    try:
        in_head = open_repo(Path.cwd()).file_at_head(error.name) is not None
    except GitError:
        in_head = False
    return missing_state_file_problem(error.name, in_head)


def paths_and_repo() -> tuple[RunnerPaths, Repo]:
    from runner_shell.git.run_checkout import locate_run

    return locate_run(Path.cwd())


def select(echo: Echo) -> int:
    """Print the next leaf: exit 0 open, 2 complete, 3 stuck (as `select_leaf` says, from a
    reading of the tree that builds none of it)."""
    from runner_shell.store.state_files import read_tree_answer

    paths, _ = paths_and_repo()
    leaf = read_tree_answer(paths).next_leaf
    if leaf is None:
        echo("select: status=complete")
        return ExitCode.COMPLETE
    status = "stuck" if leaf.stuck else "open"
    echo(
        f"select: status={status} id={leaf.id} path={leaf.path} "
        f"attempts={leaf.attempts}/{leaf.max_attempts}"
    )
    return ExitCode.STUCK if leaf.stuck else ExitCode.OK


def selection_exit_code(selection: Selection) -> int:
    """0 open, 2 complete, 3 stuck."""
    from runner_core.tree.selection import SelectionStatus

    if selection.status is SelectionStatus.COMPLETE:
        return ExitCode.COMPLETE
    return ExitCode.STUCK if selection.status is SelectionStatus.STUCK else ExitCode.OK


def validate(echo: Echo) -> int:
    """Check layout, config, tree and run identity; say which sandbox the agent gets."""
    from runner_shell.sandbox.status import sandbox_status
    from runner_shell.step.lock_and_journal import job_journals, read_journal, runner_alive
    from runner_shell.step.repository_checks import (
        check_layout,
        check_role_programs,
        check_run_identity,
    )
    from runner_shell.store.state_files import load_config, read_tree_answer

    paths, repo = paths_and_repo()
    check_layout(paths)
    echo("validate: layout=ok")
    config = load_config(paths)
    check_role_programs(config, paths.root)
    echo("validate: config=ok")
    read_tree_answer(paths)
    echo("validate: tree=ok")
    if (paths.runner_dir / "prompts").is_dir():  # Jinja2 is imported only then
        from runner_shell.step.prompt_templates import check_templates

        echo(f"validate: prompts=ok templates={','.join(check_templates(paths)) or 'none'}")
    journal = read_journal(repo)
    # validate never takes the lock: a journal whose runner is alive is an iteration in progress.
    if journal is not None and not runner_alive(journal.runner_pid):
        raise UserFacingError(_interrupted(journal))
    for _, job_path in job_journals(repo):  # a parallel job's, the same way
        job = read_journal(repo, job_path)
        if job is not None and not runner_alive(job.runner_pid):
            raise UserFacingError(_interrupted(job))
    run_id = check_run_identity(paths, repo)
    if run_id is None:
        echo("validate: run=not-started")
    else:
        echo(f"validate: run=ok id={run_id} branch=runner/{run_id}")
        from runner_shell.git.hand_edit_warnings import warn_hand_edits

        warn_hand_edits(repo, run_id)
    echo(f"validate: {sandbox_status(config).require().line}")
    if config.sandbox.setup:  # what runs setup again (docs/sandbox.md)
        echo(f"validate: setup=yes setup_inputs={','.join(config.sandbox.setup_inputs) or 'none'}")
    return ExitCode.OK


def _interrupted(journal: Journal) -> str:
    from runner_core.iteration.recovery import interrupted_problem

    return interrupted_problem(journal)


def stuck_message(selection: StuckLeaf) -> str:
    node = selection.node
    return (
        f"stuck: leaf '{node.id}' ({selection.path}) used {node.attempts}/{node.max_attempts} "
        f"attempts; run 'runner node retry|decompose|replace|skip {node.id}' "
        "(see 'runner node --help')"
    )


def limit_message(state: RunState, max_iterations: int) -> str:
    return (
        f"iteration limit reached: next_iter {state.next_iter} > max_iterations "
        f"{max_iterations} (raise max_iterations in .runner/state/config.toml)"
    )


def status(echo: Echo) -> int:
    """`runner status`: the view prints its own lines (runner_shell.views.echo)."""
    from runner_shell.views.inspect import show_status

    paths, repo = paths_and_repo()
    show_status(paths, repo, as_json=False)
    finished_line(paths, repo, echo)
    return ExitCode.OK


def finished_line(paths: RunnerPaths, repo: Repo, echo: Echo) -> None:
    """`status: finished run=<id> into=<branch> commit=<sha>` once `runner finish` merged it."""
    from runner_shell.git.run_checkout import finish_record
    from runner_shell.store.state_files import load_run_state

    run_id = load_run_state(paths).run_id
    record = None if run_id is None else finish_record(repo, run_id)
    if record is not None:
        echo(f"status: finished run={run_id} into={record['into']} commit={record['commit'][:8]}")


def history(echo: Echo) -> int:
    """`runner history`: every iteration of the current run, oldest first."""
    from runner_shell.views.inspect import show_history

    show_history(*paths_and_repo(), node=None, run=None, as_json=False)
    return ExitCode.OK


def report(echo: Echo) -> int:
    """`runner report`: the current run's summary."""
    from runner_shell.views.inspect import show_report

    show_report(*paths_and_repo(), run=None, as_json=False)
    return ExitCode.OK


def step(echo: Echo, prompt_budget: int) -> int:
    """Run one iteration: select, prompt, run the agent, validate, guard, update, log, commit."""
    from runner_core.iteration.plan import PlanKind, StuckPlan
    from runner_shell.sandbox.status import sandbox_at_start
    from runner_shell.signals import Interrupts, signals_handled
    from runner_shell.step.lock_and_journal import exclusive_lock
    from runner_shell.step.runner import (
        StepRan,
        load_for_step,
        refuse_over_budget,
        run_step,
        step_result_line,
    )
    from runner_shell.store.state_files import load_config, load_run_state

    paths, repo = paths_and_repo()
    with exclusive_lock(repo), signals_handled():
        # The step's preconditions come first; then a reached budget starts no step, as in
        # `runner loop` (which checks once per step, so run_step does not check again).
        loaded = load_for_step(paths, repo)
        sandbox_at_start(loaded.config, stderr_line)
        refuse_over_budget(paths, loaded.config, loaded.run_id)
        result = run_step(paths, repo, prompt_budget, loaded)
    if result.kind is PlanKind.COMPLETE:
        echo("step: status=complete")
    elif isinstance(result.plan, StuckPlan):
        raise UserFacingError(stuck_message(result.plan.selection), ExitCode.STUCK)
    elif result.kind is PlanKind.LIMIT:
        state = load_run_state(paths)
        raise UserFacingError(limit_message(state, load_config(paths).max_iterations))
    elif isinstance(result, StepRan):
        outcome = result.outcome
        echo(step_result_line("step:", result))
        if result.notice is not None:  # the operator's change, kept: told once
            stderr_line(f"runner: {result.notice}")
        elif outcome.runner_error is not None:
            # A signal's iteration is committed; the exit code still names the signal.
            code = Interrupts.exit_code() or ExitCode.ERROR
            raise UserFacingError(f"runner error: {outcome.runner_error}", code)
    return result.exit_code
