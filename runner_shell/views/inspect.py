"""The read-only inspection commands: `runner status`, `history`, `show`, `report`, `metrics`.

Reads the run (runner_shell.views.reading) and prints either the core's JSON document or its
lines (runner_core.views). Never takes the runner lock and never writes a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state, read_optional_text
from runner_shell.views.reading import (
    GUIDANCE_SHOWN_BYTES,
    choose_run,
    history_document,
    metrics_document,
    print_json,
    print_lines,
    report_document,
    status_reading,
)

# Each command imports the core view it prints where it prints it: `runner history` spares the
# status and report views, start-up each read would pay.
if TYPE_CHECKING:
    from runner_core.iteration.recovery import Journal
    from runner_core.views.status import StatusView


def _refuse_no_run_checked_out(paths: RunnerPaths, repo: Repo) -> None:
    """Off a run branch (on main after a run) the way on is the run's branch, not `init`;
    on a run branch a deleted run_state.json is restored with git instead."""
    state_path = paths.relative(paths.run_state)
    if paths.run_state.exists() or repo.file_at_head(state_path) is not None:
        return
    from runner_core.iteration.preconditions import no_run_checked_out_problem
    from runner_shell.step.run_branches import existing_run_ids

    run_ids = existing_run_ids(paths, repo, None)
    if run_ids:
        raise UserFacingError(no_run_checked_out_problem(repo.current_branch(), run_ids))


def show_status(
    paths: RunnerPaths, repo: Repo, as_json: bool, run: str | None = None, tree: bool = False
) -> None:
    """`runner status`: where the current run stands (works before `runner start` too), or
    where another run's branch left it (`--run`); the tree summarized unless `tree`."""
    from runner_core.views.status import render_status, status_to_json

    if run is None:
        _refuse_no_run_checked_out(paths, repo)
    reading = status_reading(paths, repo, run=run, keep_tree=False)
    if as_json:
        print_json(status_to_json(reading.view))
    else:
        print_lines(render_status(reading.view, tree=tree))
        if run is None:
            _night_status(reading.view, paths, reading.journal, reading.journal_alive)


def show_history(
    paths: RunnerPaths, repo: Repo, node: str | None, run: str | None, as_json: bool
) -> None:
    """`runner history`: one row per iteration of the run, oldest first."""
    from runner_core.json_form import json_form
    from runner_core.views.history import render_history

    shown = history_document(paths, repo, node, run)
    if as_json:
        print_json(json_form(shown))
    else:
        print_lines(render_history(shown.run_id, shown.records, node, shown.actions))


def show_iteration(
    paths: RunnerPaths,
    repo: Repo,
    iteration: int,
    run: str | None,
    as_json: bool,
    with_tests: bool = False,
) -> None:
    """`runner show ITER`: one iteration's meta, output and the heads of its logs, its commit and
    the diff stat of the agent's work, from git when the directory is gone
    (runner_shell.views.history)."""
    from runner_shell.views.history import show_sourced_iteration

    run_id = choose_run(paths, load_run_state(paths), run)
    show_sourced_iteration(paths, repo, run_id, iteration, as_json, with_tests)


def show_report(paths: RunnerPaths, repo: Repo, run: str | None, as_json: bool) -> None:
    """`runner report`: the run's summary, the per-node table, the slowest and most retried."""
    import attrs

    from runner_core.json_form import json_form
    from runner_core.views.report import render_report
    from runner_core.views.steering import question_lines

    report, problems = report_document(paths, repo, run)
    if as_json:
        print_json(json_form(attrs.evolve(report, warnings=problems)))
    else:
        print_lines(render_report(report))
        if run is None or run == load_run_state(paths).run_id:
            asked = read_optional_text(paths.questions, GUIDANCE_SHOWN_BYTES)
            told = read_optional_text(paths.guidance, GUIDANCE_SHOWN_BYTES)
            for line in question_lines(asked, told):
                print_lines((line,))


def _night_status(
    view: StatusView, paths: RunnerPaths, journal: Journal | None, alive: bool
) -> None:
    # The follow views (the event log's lines, the budgets') are imported only when there is
    # an iteration running or a budget to show: a run between iterations shows neither.
    running: tuple[Journal, ...]
    if view.jobs is None:
        running = (journal,) if alive and journal is not None else ()
    else:  # a parallel run: each live job's elapsed time and last lines, in iteration order
        running = tuple(job.journal for job in view.jobs if job.alive)
    lines: tuple[str, ...] = ()
    if running:
        from runner_shell.views.follow import running_status_lines

        lines = tuple(line for each in running for line in running_status_lines(paths, each))
    if view.budgets:
        from runner_core.views.budget_lines import budget_lines

        lines = (*lines, *budget_lines(view.budgets))
    for line in lines:
        print_lines((line,))


def show_metrics(paths: RunnerPaths, repo: Repo, run: str | None) -> None:
    """`runner metrics`: the report's figures in Prometheus text format, for a textfile
    collector (write to a temp file, then rename it into the collector's directory)."""
    import typer

    typer.echo(metrics_document(paths, repo, run), nl=False)


def show_prompt(paths: RunnerPaths, repo: Repo, iteration: int, run: str | None) -> None:
    """`runner show ITER --prompt`: the prompt.md the agent was sent, byte for byte, from the
    iteration's directory, else from the run's log archive (refs/runner/logs/<run>)."""
    import sys

    from runner_shell.git.log_archive import read_archived

    run_id = choose_run(paths, load_run_state(paths), run)
    path = paths.iter_dir(run_id, iteration) / "prompt.md"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        found = read_archived(paths.root, run_id, frozenset({"prompt.md"}), iteration) or {}
        if (iteration, "prompt.md") not in found:
            raise UserFacingError(
                f"{paths.relative(path)} is missing and the log archive has none: iteration "
                f"{iteration} of run {run_id} sent no prompt (see 'runner history')"
            ) from None
        data = found[(iteration, "prompt.md")]
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
