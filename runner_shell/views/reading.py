"""Reading a run for the read-only commands and `runner serve`: its tree, run state, config,
history (from the iteration log, else git), the journal of an iteration in progress and the
operator commits, handed to runner_core.views to build each document.

Never takes the runner lock and never writes a file: it is safe beside a running loop. A
damaged or missing meta.json is a warning (by default one line on stderr) and is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from runner_core import ExecutionHistory, Node
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.run.identity import branch_for, run_id_problem
from runner_core.run.state import RunState, RunStateError, run_state_from_text
from runner_core.tree.model import nodes_by_id
from runner_core.tree.serialization import TreeValidationError
from runner_core.views.history import HistoryDocument, history_actions, history_records
from runner_core.views.text import terminal_text
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.lock_and_journal import (
    job_journals,
    job_journals_dir,
    job_worker_path,
    journal_path,
    lock_held,
    read_journal,
    runner_alive,
)
from runner_shell.store.files import read_bytes_capped
from runner_shell.store.iteration_log import iteration_dirs, known_runs, load_history
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import (
    TREE_MAX_BYTES,
    load_config,
    load_run_state,
    load_tree,
    read_optional_text,
    read_plain_root_of,
)
from runner_shell.views.echo import echo
from runner_shell.views.operator_log import OperatorLog, operator_actions

# Each command imports the views it shows where it builds them: `runner history` spares the
# status, report and metrics views and the sandbox probe, start-up each read would pay.
if TYPE_CHECKING:
    from runner_core.run.config import Config
    from runner_core.tree.plain import PlainNode
    from runner_core.views.report import Report, RunFigures
    from runner_core.views.status import OperatorFacts, StatusView
    from runner_core.views.suite import TargetNotes
    from runner_shell.store.history_fold import HistoryFold

# How much of guidance.md and questions.md `runner status` shows.
GUIDANCE_SHOWN_BYTES = 4 * 1024
# How much of a job's worker file `runner status` reads: an identity is one short line.
WORKER_SHOWN_BYTES = 1024


def warn(line: str) -> None:
    echo(f"runner: warning: {line}", err=True)


def print_lines(lines: Iterable[str]) -> None:
    """A text view's lines, with whatever the agent wrote among them escaped for the terminal
    (runner_core.views.text); `--json` documents are JSON-escaped instead."""
    echo(terminal_text("\n".join(lines)))


def print_json(document: dict[str, Any]) -> None:
    echo(json.dumps(document, indent=2, ensure_ascii=False))


def _journal(
    repo: Repo, warning: Callable[[str], None] = warn, path: Path | None = None
) -> Journal | None:
    """The journal of an iteration in progress (a parallel job's at `path`); a damaged one is a
    warning here, not an error."""
    try:
        return read_journal(repo, path)
    except UserFacingError as error:
        warning(str(error))
        return None


def _job_journals(repo: Repo, warning: Callable[[str], None] = warn) -> tuple[Journal, ...]:
    """The journals of a parallel run's jobs in flight, by iteration (none in a one-slot run)."""
    found = (_journal(repo, warning, path) for _, path in job_journals(repo))
    return tuple(journal for journal in found if journal is not None)


def _worker(repo: Repo, iteration: int) -> str | None:
    """The worker running remote job `iteration`, as its loop wrote it; None before it heard."""
    text = read_optional_text(job_worker_path(repo, iteration), WORKER_SHOWN_BYTES)
    lines = [] if text is None else text.strip().splitlines()
    return lines[0] if lines else None


def _in_flight(journal: Journal | None, jobs: tuple[Journal, ...]) -> tuple[Journal, ...]:
    """Every journal of an iteration in progress: the run's, then its parallel jobs'."""
    return (*(() if journal is None else (journal,)), *jobs)


def choose_run(paths: RunnerPaths, state: RunState, requested: str | None) -> str:
    """The run a command inspects: `--run`, else the run in run_state.json."""
    on_disk = known_runs(paths)
    listing = f"runs on disk: {', '.join(on_disk)}" if on_disk else "no runs on disk"
    if requested is None:
        if state.run_id is None:
            hint = f"pass --run ({listing})" if on_disk else "run 'runner start'"
            raise UserFacingError(f"no run started in run_state.json ({hint})")
        return state.run_id
    problem = run_id_problem(requested)
    if problem is not None:
        raise UserFacingError(f"--run: {problem}")
    if requested != state.run_id and requested not in on_disk:
        raise UserFacingError(f"unknown run '{requested}' ({listing})")
    return requested


def _history(
    paths: RunnerPaths,
    run_id: str,
    journals: tuple[Journal, ...],
    repo: Repo | None = None,
    next_iter: int = 1,
    warning: Callable[[str], None] = warn,
    fold: HistoryFold | None = None,
) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """The run's history; the iterations in progress (`journals`) have no meta.json yet and
    are not a warning. `fold` keeps the records between readings (runner_shell.store.history_fold).

    With `repo`, a run that has iterations (`next_iter` > 1) but no iteration directories is
    read from its archive ref, else its commit trailers, with a warning naming the source; the
    iterations its directories lack are read from there too.
    """
    history, problems = load_history(paths, run_id) if fold is None else fold.read(paths, run_id)
    # Only a run without iteration directories reads from git instead, and those give no
    # record: the directory is listed once for the common case, git's readers imported here.
    if not history.records and repo is not None and next_iter > 1:
        from runner_shell.git.history_sources import fallback_history

        fallback = fallback_history(paths, repo, run_id)
        if fallback is not None:
            if fallback.warning is not None:
                warning(fallback.warning)
            return fallback.history, fallback.problems
    if problems:
        problems = _not_in_progress(paths, run_id, problems, journals, repo, next_iter)
    if repo is not None and next_iter > 1:
        from runner_shell.git.history_sources import fill_missing

        filled = fill_missing(paths, repo, run_id, next_iter, history)
        if filled.warning is not None:
            warning(filled.warning)
        history, problems = filled.history, (*problems, *filled.problems)
    return history, problems


def _not_in_progress(
    paths: RunnerPaths,
    run_id: str,
    problems: tuple[str, ...],
    journals: tuple[Journal, ...],
    repo: Repo | None,
    next_iter: int,
) -> tuple[str, ...]:
    """`problems` without the missing meta.json of an iteration in progress: one a journal
    names, read before the listing (`journals`) or after it (a job that started meanwhile), one
    a live loop (it holds the lock) has not booked yet (from `next_iter` on: a parallel job
    between its dispatch and its journal, or between its journal and its merge), or one whose
    meta.json is there now (it finished meanwhile). A dead loop's iteration stays a warning."""
    in_progress = {journal.iteration for journal in journals if journal.run_id == run_id}
    live = False
    if repo is not None:
        quiet: Callable[[str], None] = lambda _line: None  # noqa: E731 (warned by the caller)
        later = _in_flight(_journal(repo, quiet), _job_journals(repo, quiet))
        in_progress |= {journal.iteration for journal in later if journal.run_id == run_id}
        live = lock_held(repo) and _is_current(paths, run_id)
    kept = []
    for line in problems:
        number = _missing_meta_iteration(paths, run_id, line)
        running = number is not None and (number in in_progress or (live and number >= next_iter))
        if number is None or not (
            running or (paths.iter_dir(run_id, number) / "meta.json").exists()
        ):
            kept.append(line)
    return tuple(kept)


def _is_current(paths: RunnerPaths, run_id: str) -> bool:
    try:
        return load_run_state(paths).run_id == run_id
    except (UserFacingError, OSError):
        return False


def _missing_meta_iteration(paths: RunnerPaths, run_id: str, line: str) -> int | None:
    """The iteration whose meta.json `line` says is missing, else None."""
    prefix = f"{paths.relative(paths.iter_dir(run_id, 1).parent)}/"
    if not (
        line.startswith(prefix) and line.endswith("/meta.json: missing (iteration interrupted?)")
    ):
        return None
    name = line[len(prefix) :].split("/", 1)[0]
    return int(name) if name.isascii() and name.isdigit() else None


def run_history(
    paths: RunnerPaths, repo: Repo, run_id: str
) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """A run's history and the warnings about it, beside a loop that may be mid-iteration;
    from git when the current run's iteration directories are gone, as every view reads it."""
    state = load_run_state(paths)
    next_iter = state.next_iter if state.run_id == run_id else 1
    return _history(paths, run_id, _in_flight(_journal(repo), _job_journals(repo)), repo, next_iter)


def _last_tree(paths: RunnerPaths, run_id: str) -> Node | None:
    """An earlier run's latest tree: the newest readable tree.after.json of its iterations."""
    for _, directory in reversed(iteration_dirs(paths, run_id)):
        try:
            return _parsed(read_bytes_capped(directory / "tree.after.json", TREE_MAX_BYTES))
        except (OSError, TreeValidationError):
            continue
    return None


def run_figures(
    paths: RunnerPaths, repo: Repo, requested: str | None
) -> tuple[RunFigures, tuple[str, ...]]:
    """What `runner report` and `runner metrics` compute from, and the warnings on the way.

    The current run is read from `.runner/state/`; an earlier run from its iteration log (its
    latest `tree.after.json`, next iteration after its last), with today's max_iterations.
    """
    from runner_core.views.report import RunFigures
    from runner_core.views.running import running_node_id

    state = load_run_state(paths)
    run_id = choose_run(paths, state, requested)
    config = load_config(paths)
    journal = _journal(repo)
    current = run_id == state.run_id
    in_flight = _in_flight(journal, _job_journals(repo))
    history, problems = _history(paths, run_id, in_flight, repo, state.next_iter if current else 2)
    if run_id == state.run_id:
        tree: Node | None = load_tree(paths)
        next_iteration = state.next_iter
    else:
        tree = _last_tree(paths, run_id)
        next_iteration = max((r.iteration for r in history.records), default=0) + 1
    figures = RunFigures(
        run_id=run_id,
        history=history,
        tree=tree,
        next_iteration=next_iteration,
        max_iterations=config.max_iterations,
        running_node_id=running_node_id(journal, run_id),
        operator_actions=operator_actions(repo, run_id),
        budget=config.budget,
    )
    return figures, problems


@attrs.frozen
class StatusReading:
    """The status view and what it was built from, for the views that show more beside it."""

    view: StatusView
    # None when read for the view alone (`status_reading(..., keep_tree=False)`).
    tree: Node | None
    history: ExecutionHistory
    journal: Journal | None
    journal_alive: bool


def status_sources(paths: RunnerPaths, repo: Repo) -> tuple[Path, ...]:
    """The files a status reading depends on beside the iteration directories (whose meta.json
    is written only as run_state.json or the journal changes): while none of them changes, nor
    whether a runner is alive, a reading stays current. HEAD's reflog moves with each commit,
    so an operator action committed after its file was written is seen too."""
    return (
        paths.run_state,
        paths.tree,
        paths.config,
        paths.guidance,
        paths.questions,
        journal_path(repo),
        job_journals_dir(repo),
        repo.git_path("HEAD"),
        repo.git_path("logs/HEAD"),
    )


def _parsed(data: bytes) -> Node:
    """`parse_tree`, imported where a tree is parsed here: a committed one, rarely read."""
    from runner_core.validation.loading import parse_tree

    return parse_tree(data)


def run_files(paths: RunnerPaths, repo: Repo, run: str | None) -> tuple[RunState, Node]:
    """The run state and tree of `run` (None: the current run): the working tree's for the
    current run, else those its branch's tip committed."""
    state = load_run_state(paths)
    if run is None or run == state.run_id:
        return state, load_tree(paths)
    run_id = choose_run(paths, state, run)
    branch = branch_for(run_id)
    state_name, tree_name = paths.relative(paths.run_state), paths.relative(paths.tree)
    state_bytes = repo.file_at(branch, state_name)
    tree_bytes = repo.file_at(branch, tree_name)
    if state_bytes is None or tree_bytes is None:
        raise UserFacingError(f"run '{run_id}': branch {branch} holds no {state_name}")
    try:
        return run_state_from_text(state_bytes), _parsed(tree_bytes)
    except (ValueError, RunStateError, TreeValidationError) as error:
        raise UserFacingError(f"run '{run_id}': {branch}'s state is damaged: {error}") from None


def _committed_run_files(
    paths: RunnerPaths, repo: Repo, state: RunState, tree: Node
) -> tuple[RunState, Node]:
    """The run state and tree HEAD holds; the ones given when HEAD's cannot be read."""
    state_bytes = repo.file_at_head(paths.relative(paths.run_state))
    tree_bytes = repo.file_at_head(paths.relative(paths.tree))
    if state_bytes is None or tree_bytes is None:
        return state, tree
    try:
        return run_state_from_text(state_bytes), _parsed(tree_bytes)
    except (ValueError, RunStateError, TreeValidationError):
        return state, tree


def status_reading(
    paths: RunnerPaths,
    repo: Repo,
    warning: Callable[[str], None] = warn,
    run: str | None = None,
    fold: HistoryFold | None = None,
    operators: OperatorLog | None = None,
    keep_tree: bool = True,
) -> StatusReading:
    """Read the run once for its status view: its state, tree, config, journal and history;
    each problem met on the way is given to `warning` (by default a line on stderr). `run`
    names another run than the current one (`serve --run`, `?run=`); `fold`, kept by a
    long-lived reader, spares reading again the iterations it has read, and `operators` the
    commits. Without `keep_tree` the current run's tree is read without building its `Node`s
    where runner_core.tree.plain can (`runner status`), and the reading keeps no tree."""
    from runner_core.views.status import OperatorFacts, RunningJob
    from runner_shell.sandbox.status import sandbox_status

    state, tree = _status_files(paths, repo, run, keep_tree)
    config = load_config(paths)
    journal = _journal(repo, warning)
    if journal is not None and journal.run_id != state.run_id:
        journal = None  # another run's iteration in progress is not this run's
    if journal is not None and journal.phase in (JournalPhase.WRITING, JournalPhase.COMMITTING):
        # Its files are written but not (yet) committed: what is shown is what is committed.
        state, tree = _committed_run_files(paths, repo, state, _as_node(paths, tree))
    jobs = _job_journals(repo, warning)
    in_flight = _in_flight(journal, jobs)
    history, problems = (
        _history(paths, state.run_id, in_flight, repo, state.next_iter, warning, fold)
        if state.run_id is not None
        else (ExecutionHistory(), ())
    )
    for line in problems:
        warning(line)
    operator = OperatorFacts(
        journal_alive=journal is None or runner_alive(journal.runner_pid),
        guidance=read_optional_text(paths.guidance, GUIDANCE_SHOWN_BYTES),
        questions=read_optional_text(paths.questions, GUIDANCE_SHOWN_BYTES),
        actions=(
            operator_actions(repo, state.run_id)
            if operators is None
            else operators.read(repo, state.run_id)
        ),
        jobs=tuple(
            RunningJob(job, runner_alive(job.runner_pid), _worker(repo, job.iteration))
            for job in jobs
        ),
    )
    sandbox = sandbox_status(config)
    view = attrs.evolve(
        _view_of(tree, state, config, history, journal, operator),
        sandbox=sandbox.mode,
        sandbox_layers=sandbox.layers()[1:],
        targets=_target_notes(repo, config, paths, tree) if state.run_id is not None else None,
    )
    kept = None if isinstance(tree, tuple) else tree
    return StatusReading(view, kept, history, journal, operator.journal_alive)


def _status_files(
    paths: RunnerPaths, repo: Repo, run: str | None, keep_tree: bool
) -> tuple[RunState, Node | PlainNode]:
    """`run_files`, the tree as runner_core.tree.plain reads it when the caller keeps none and
    it is the working tree's; the parsed tree (or its error) where that cannot answer."""
    if keep_tree or run is not None:
        return run_files(paths, repo, run)
    state = load_run_state(paths)
    root = read_plain_root_of(paths)
    return state, load_tree(paths) if root is None else root


def _as_node(paths: RunnerPaths, tree: Node | PlainNode) -> Node:
    """The `Node` tree of the few readings that need one (read again: a rare case)."""
    return load_tree(paths) if isinstance(tree, tuple) else tree


def _view_of(
    tree: Node | PlainNode,
    state: RunState,
    config: Config,
    history: ExecutionHistory,
    journal: Journal | None,
    operator: OperatorFacts,
) -> StatusView:
    from runner_core.views.status import plain_status_view, status_view

    if isinstance(tree, tuple):
        return plain_status_view(
            tree, state, config.max_iterations, history, journal, operator, config.budget
        )
    return status_view(
        tree, state, config.max_iterations, history, journal, operator, config.budget
    )


def _target_notes(
    repo: Repo, config: Config, paths: RunnerPaths, read: Node | PlainNode
) -> TargetNotes | None:
    """A ratchet run's notes on its open leaves' tests, against the head's baseline."""
    from runner_core.run.config import RATCHET

    if config.guard_mode != RATCHET:
        return None
    tree = _as_node(paths, read)
    # A ratchet run's only: the baselines' reader imports the JUnit parser.
    from runner_core.views.suite import target_notes
    from runner_shell.guard.baselines import known_baseline

    head = repo.head()
    baseline = None if head is None else known_baseline(repo, head.sha)
    return target_notes(tree, baseline)


def history_document(
    paths: RunnerPaths, repo: Repo, node: str | None, run: str | None
) -> HistoryDocument:
    """The run's iterations, oldest first, and its operator actions; warns on stderr."""
    state = load_run_state(paths)
    run_id = choose_run(paths, state, run)
    next_iter = state.next_iter if run_id == state.run_id else 2
    history, problems = _history(
        paths, run_id, _in_flight(_journal(repo), _job_journals(repo)), repo, next_iter
    )
    for line in problems:
        warn(line)
    records = history_records(history, node)
    actions = history_actions(operator_actions(repo, run_id), node)
    if node is not None and not records and not actions:
        known = run_id == state.run_id and node in nodes_by_id(load_tree(paths))
        if not known:
            raise UserFacingError(
                f"history: no node '{node}' in run {run_id}'s tree or iterations "
                "(see 'runner status' for the node ids)"
            )
    return HistoryDocument(run_id, node, records, tuple(actions), problems)


def report_document(
    paths: RunnerPaths, repo: Repo, run: str | None
) -> tuple[Report, tuple[str, ...]]:
    """The report of `runner report` and `GET /api/report`, and its warnings (also on stderr)."""
    from runner_core.views.report import build_report

    figures, problems = run_figures(paths, repo, run)
    for line in problems:
        warn(line)
    return build_report(figures), problems


def metrics_document(paths: RunnerPaths, repo: Repo, run: str | None) -> str:
    """`runner metrics` and `GET /metrics`: the Prometheus text; warns on stderr."""
    from runner_core.views.metrics import metrics_text

    figures, problems = run_figures(paths, repo, run)
    for line in problems:
        warn(line)
    return metrics_text(figures)
