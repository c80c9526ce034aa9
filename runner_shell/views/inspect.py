"""The read-only inspection commands: `runner status`, `history`, `show`, `report`, `metrics`.

Gathers what runner_core.views.reports needs (tree, run state, config, the iteration log, the
journal
of an iteration in progress) and prints either the core's JSON document or a human rendering of
it. Never takes the runner lock and never writes a file: it is safe beside a running loop. A
damaged or missing meta.json is a warning on stderr, one line each, and is skipped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import attrs
import typer

from runner_core import ExecutionHistory, Node, parse_tree
from runner_core.history.records import (
    DamagedRecord,
    ExecutionRecord,
    NodeStats,
    TokenUsage,
    record_from_meta,
)
from runner_core.iteration.recovery import Journal
from runner_core.run.identity import run_id_problem
from runner_core.run.operations import OperatorAction, action_text
from runner_core.run.state import RunState
from runner_core.tree.model import nodes_by_id
from runner_core.tree.serialization import TreeValidationError
from runner_core.views.follow import budget_lines, rolled_up_lines
from runner_core.views.reports import (
    FileFacts,
    OperatorFacts,
    Report,
    RunFigures,
    StatusView,
    build_report,
    history_actions,
    history_records,
    history_to_json,
    interleaved,
    metrics_text,
    report_to_json,
    running_node_id,
    show_to_json,
    status_to_json,
    status_view,
)
from runner_core.views.text import flatten
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.steer.commits import operator_actions
from runner_shell.step.lock_and_journal import journal_path, read_journal, runner_alive
from runner_shell.store.files import FileTooLarge, open_regular, read_bytes_capped
from runner_shell.store.history_sources import fallback_history
from runner_shell.store.iteration_log import iteration_dirs, known_runs, load_history
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import (
    TREE_MAX_BYTES,
    load_config,
    load_run_state,
    load_tree,
    read_optional_text,
)

# `runner show` reads at most this much of a log, and shows at most this many of its lines.
LOG_HEAD_BYTES = 8 * 1024
LOG_HEAD_LINES = 20
LOG_LINE_CHARS = 400
# meta.json and output.json are small; larger ones are reported, not loaded.
SMALL_JSON_MAX_BYTES = 1024 * 1024
ERROR_CHARS = 60
# How much of guidance.md and questions.md `runner status` shows.
GUIDANCE_SHOWN_BYTES = 4 * 1024
ORDER_GROUPS = 20


# ---------------------------------------------------------------- gathering


def warn(line: str) -> None:
    typer.echo(f"runner: warning: {line}", err=True)


def _print_json(document: dict[str, Any]) -> None:
    typer.echo(json.dumps(document, indent=2, ensure_ascii=False))


def _journal(repo: Repo, warning: Callable[[str], None] = warn) -> Journal | None:
    """The journal of an iteration in progress; a damaged one is a warning here, not an error."""
    try:
        return read_journal(repo)
    except UserFacingError as error:
        warning(str(error))
        return None


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
    journal: Journal | None,
    repo: Repo | None = None,
    next_iter: int = 1,
    warning: Callable[[str], None] = warn,
) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """The run's history; the iteration in progress has no meta.json yet and is not a warning.

    With `repo`, a run that has iterations (`next_iter` > 1) but no iteration directories is
    read from its archive ref, else its commit trailers, with a warning naming the source.
    """
    fallback = None if repo is None or next_iter <= 1 else fallback_history(paths, repo, run_id)
    if fallback is not None:
        if fallback.warning is not None:
            warning(fallback.warning)
        return fallback.history, fallback.problems
    history, problems = load_history(paths, run_id)
    if journal is not None and journal.run_id == run_id:
        meta = paths.iter_dir(run_id, journal.iteration) / "meta.json"
        in_progress = f"{paths.relative(meta)}: missing"
        problems = tuple(line for line in problems if not line.startswith(in_progress))
    return history, problems


def run_history(
    paths: RunnerPaths, repo: Repo, run_id: str
) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """A run's history and the warnings about it, beside a loop that may be mid-iteration;
    from git when the current run's iteration directories are gone, as every view reads it."""
    state = load_run_state(paths)
    next_iter = state.next_iter if state.run_id == run_id else 1
    return _history(paths, run_id, _journal(repo), repo, next_iter)


def _last_tree(paths: RunnerPaths, run_id: str) -> Node | None:
    """An earlier run's latest tree: the newest readable tree.after.json of its iterations."""
    for _, directory in reversed(iteration_dirs(paths, run_id)):
        try:
            return parse_tree(read_bytes_capped(directory / "tree.after.json", TREE_MAX_BYTES))
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
    state = load_run_state(paths)
    run_id = choose_run(paths, state, requested)
    config = load_config(paths)
    journal = _journal(repo)
    current = run_id == state.run_id
    history, problems = _history(paths, run_id, journal, repo, state.next_iter if current else 2)
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


# ---------------------------------------------------------------- formatting


def duration_text(ms: int) -> str:
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def tokens_text(tokens: TokenUsage | None) -> str:
    return "-" if tokens is None else f"{tokens.input}/{tokens.output}/{tokens.cached}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], indent: str = "") -> list[str]:
    """Left-aligned columns two spaces apart, no trailing blanks."""
    body = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in body) for i in range(len(headers))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in body
    ]


def _run_groups(order: Sequence[str]) -> str:
    """`root, root.1 (x2), root.2 (x3)`: consecutive repeats folded, long orders cut."""
    groups: list[tuple[str, int]] = []
    for node_id in order:
        if groups and groups[-1][0] == node_id:
            groups[-1] = (node_id, groups[-1][1] + 1)
        else:
            groups.append((node_id, 1))
    words = [node_id if n == 1 else f"{node_id} (x{n})" for node_id, n in groups]
    if len(words) > ORDER_GROUPS:
        words = [*words[:ORDER_GROUPS], f"… ({len(words) - ORDER_GROUPS} more)"]
    return ", ".join(words) or "-"


def _error_text(record: ExecutionRecord) -> str:
    if record.error_kind is None:
        return "-"
    return flatten(f"{record.error_kind.value}: {record.error or ''}", ERROR_CHARS)


# ---------------------------------------------------------------- runner status


def render_status(view: StatusView) -> list[str]:
    out = []
    if view.run_id is None:
        out.append("status: run=not-started")
    else:
        out.append(f"status: run={view.run_id} branch={view.branch}")
    out.append(f"status: next_iter={view.next_iteration} max_iterations={view.max_iterations}")
    out.append(f"status: leaves passed={view.leaves_passed} total={view.leaves_total}")
    selected = view.selected
    if selected is None:
        out.append(f"status: selected={view.selection.value}")
    else:
        out.append(
            f"status: selected={view.selection.value} id={selected.id} path={selected.path} "
            f"attempts={selected.attempts}/{selected.max_attempts}"
        )
    if not view.stuck:
        out.append("status: stuck=none")
    for leaf in view.stuck:
        out.append(
            f"status: stuck id={leaf.id} path={leaf.path} "
            f"attempts={leaf.attempts}/{leaf.max_attempts}"
        )
    state = view.state
    if state.last_status is None:
        out.append("status: last=none")
    else:
        guard = state.last_guard.value if state.last_guard is not None else "-"
        out.append(f"status: last status={state.last_status.value} guard={guard}")
    if state.last_summary:
        out.append(f"status: last_summary={flatten(state.last_summary, 100)}")
    running = view.running
    if running is not None:
        out.append(
            f"status: running iter={running.iteration} node={running.node_id} "
            f"phase={running.phase.value} started_at={running.started_at}"
        )
    cut = view.interrupted
    if cut is not None:
        out.append(
            f"status: interrupted iter={cut.iteration} node={cut.node_id} phase={cut.phase.value} "
            f"started_at={cut.started_at} (its runner is gone; run 'runner recover')"
        )
    out.extend(f"status: operator {action_text(action)}" for action in view.operator_actions)
    if view.guidance is not None:
        out.append("guidance:")
        out.extend(f"  {line}" for line in view.guidance.rstrip().splitlines())
    if view.questions is not None:
        out.append("questions (a leaf is stuck; the agents asked):")
        out.extend(f"  {line}" for line in view.questions.rstrip().splitlines())
    out.append("tree:")
    for row in view.tree:
        out.append(
            f"  {'  ' * row.depth}{row.id}  {row.state.value}  "
            f"attempts={row.attempts}/{row.max_attempts}  {flatten(row.title, 80)}"
        )
    for node_id, executions, display in view.removed:
        out.append(f"removed: {node_id}  {display.value}  executions={executions}")
    return out


def status_document_view(paths: RunnerPaths, repo: Repo) -> StatusView:
    """Where the current run stands (`runner status`, `GET /api/status`); warns on stderr."""
    return status_reading(paths, repo).view


@attrs.frozen
class StatusReading:
    """The status view and what it was built from, for the views that show more beside it."""

    view: StatusView
    tree: Node
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
        repo.git_path("HEAD"),
        repo.git_path("logs/HEAD"),
    )


def status_reading(
    paths: RunnerPaths, repo: Repo, warning: Callable[[str], None] = warn
) -> StatusReading:
    """Read the run once for its status view: its state, tree, config, journal and history;
    each problem met on the way is given to `warning` (by default a line on stderr)."""
    state = load_run_state(paths)
    tree = load_tree(paths)
    config = load_config(paths)
    journal = _journal(repo, warning)
    history, problems = (
        _history(paths, state.run_id, journal, repo, state.next_iter, warning)
        if state.run_id is not None
        else (ExecutionHistory(), ())
    )
    for line in problems:
        warning(line)
    operator = OperatorFacts(
        journal_alive=journal is None or runner_alive(journal.runner_pid),
        guidance=read_optional_text(paths.guidance, GUIDANCE_SHOWN_BYTES),
        questions=read_optional_text(paths.questions, GUIDANCE_SHOWN_BYTES),
        actions=operator_actions(repo, state.run_id),
    )
    view = status_view(
        tree, state, config.max_iterations, history, journal, operator, config.budget
    )
    return StatusReading(view, tree, history, journal, operator.journal_alive)


def show_status(paths: RunnerPaths, repo: Repo, as_json: bool) -> None:
    """`runner status`: where the current run stands; works before `runner start` too."""
    reading = status_reading(paths, repo)
    if as_json:
        _print_json(status_to_json(reading.view))
    else:
        typer.echo("\n".join(render_status(reading.view)))
        _night_status(reading.view, paths, reading.journal, reading.journal_alive)


# ---------------------------------------------------------------- runner history


def render_history(
    run_id: str,
    records: Sequence[ExecutionRecord],
    node: str | None,
    actions: Sequence[OperatorAction] = (),
) -> list[str]:
    which = f" node={node}" if node is not None else ""
    out = [f"history: run={run_id}{which} iterations={len(records)}"]
    if actions:
        out[0] += f" operator_actions={len(actions)}"
    if not records:
        return out + [f"  operator {action_text(action)}" for action in actions]
    headers = ("ITER", "NODE", "ROLE", "STATUS", "GUARD", "DURATION", "TOKENS in/out/cached")
    rows = [
        (
            str(record.iteration),
            record.node_id,
            record.role.value,
            record.status.value,
            record.guard.value,
            duration_text(record.duration_ms),
            tokens_text(record.tokens),
            _error_text(record),
        )
        for record in records
    ]
    header, *lines = table((*headers, "ERROR"), rows)
    by_record = {id(record): line for record, line in zip(records, lines, strict=True)}
    out.append(header)
    for entry in interleaved(records, actions):
        if isinstance(entry, OperatorAction):
            out.append(f"  operator {action_text(entry)}")
        else:
            out.append(by_record[id(entry)])
    return out


@attrs.frozen(slots=True)
class HistoryDocument:
    """What `runner history` and `GET /api/history` show."""

    run_id: str
    records: tuple[ExecutionRecord, ...]
    node: str | None
    problems: tuple[str, ...]
    actions: tuple[OperatorAction, ...]

    def to_json(self) -> dict[str, Any]:
        return history_to_json(self.run_id, self.records, self.node, self.problems, self.actions)


def history_document(
    paths: RunnerPaths, repo: Repo, node: str | None, run: str | None
) -> HistoryDocument:
    """The run's iterations, oldest first, and its operator actions; warns on stderr."""
    state = load_run_state(paths)
    run_id = choose_run(paths, state, run)
    next_iter = state.next_iter if run_id == state.run_id else 2
    history, problems = _history(paths, run_id, _journal(repo), repo, next_iter)
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
    return HistoryDocument(run_id, records, node, problems, tuple(actions))


def show_history(
    paths: RunnerPaths, repo: Repo, node: str | None, run: str | None, as_json: bool
) -> None:
    """`runner history`: one row per iteration of the run, oldest first."""
    shown = history_document(paths, repo, node, run)
    if as_json:
        _print_json(shown.to_json())
    else:
        typer.echo("\n".join(render_history(shown.run_id, shown.records, node, shown.actions)))


# ---------------------------------------------------------------- runner show


def _iterations_text(numbers: Sequence[int]) -> str:
    """`1-5, 7`: the iterations on disk, consecutive ones as ranges."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and spans[-1][1] == number - 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "none"


def log_head(path: Path, size: int) -> tuple[tuple[str, ...], bool]:
    """The first lines of a log and whether there is more: never reads more than
    LOG_HEAD_BYTES, so a huge log costs no more than a small one."""
    with open_regular(path) as handle:
        data = handle.read(LOG_HEAD_BYTES)
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "" and len(data) == size:
        lines.pop()
    truncated = size > len(data) or len(lines) > LOG_HEAD_LINES
    head = tuple(
        line if len(line) <= LOG_LINE_CHARS else line[:LOG_LINE_CHARS] + "…"
        for line in lines[:LOG_HEAD_LINES]
    )
    return head, truncated


def _small_json(path: Path) -> tuple[Any, str | None]:
    """A small JSON file's value, or why it cannot be had."""
    try:
        return json.loads(read_bytes_capped(path, SMALL_JSON_MAX_BYTES)), None
    except FileNotFoundError:
        return None, "missing"
    except FileTooLarge as error:
        return None, f"{error.size} bytes; at most {error.limit} are read"
    except (OSError, ValueError) as error:
        return None, f"unreadable: {error}"


@attrs.frozen(slots=True)
class IterationFiles:
    """One iteration directory as `runner show` reads it."""

    run_id: str
    iteration: int
    directory: str
    meta: ExecutionRecord | None
    meta_problem: str | None
    output: dict[str, Any] | None
    output_problem: str | None
    files: tuple[FileFacts, ...]

    def to_json(self) -> dict[str, Any]:
        return show_to_json(
            self.run_id,
            self.iteration,
            self.directory,
            self.meta,
            self.meta_problem,
            self.output,
            self.output_problem,
            self.files,
        )


def read_iteration(paths: RunnerPaths, run_id: str, iteration: int) -> IterationFiles:
    directory = paths.iter_dir(run_id, iteration)
    if not directory.is_dir():
        numbers = [number for number, _ in iteration_dirs(paths, run_id)]
        raise UserFacingError(
            f"no iteration {iteration} in run {run_id} "
            f"(iterations on disk: {_iterations_text(numbers)})"
        )
    return read_iteration_at(run_id, iteration, directory, paths.relative(directory))


def read_iteration_at(
    run_id: str, iteration: int, directory: Path, shown_as: str
) -> IterationFiles:
    """One iteration's files in `directory`, which `runner show` names `shown_as`."""
    meta_value, meta_problem = _small_json(directory / "meta.json")
    meta = None
    if meta_problem is None:
        try:
            meta = record_from_meta(meta_value)
        except DamagedRecord as error:
            meta_problem = str(error)
    output_value, output_problem = _small_json(directory / "output.json")
    if output_problem is None and not isinstance(output_value, dict):
        output_problem = "not a JSON object"
    files = []
    for entry in sorted(directory.iterdir(), key=lambda path: path.name):
        if entry.is_symlink() or not entry.is_file():
            continue
        size = entry.stat().st_size
        if entry.name.endswith(".log"):
            head, truncated = log_head(entry, size)
            files.append(FileFacts(entry.name, size, head, truncated))
        else:
            files.append(FileFacts(entry.name, size))
    return IterationFiles(
        run_id=run_id,
        iteration=iteration,
        directory=shown_as,
        meta=meta,
        meta_problem=meta_problem,
        output=output_value if output_problem is None else None,
        output_problem=output_problem,
        files=tuple(files),
    )


def render_show(shown: IterationFiles) -> list[str]:
    out = [f"show: run={shown.run_id} iter={shown.iteration} dir={shown.directory}"]
    meta = shown.meta
    if meta is None:
        out.append(f"meta: {shown.meta_problem}")
    else:
        out += [
            f"node: {meta.node_id} role={meta.role.value} execution={meta.execution} "
            f"backend={meta.backend}",
            f"outcome: status={meta.status.value} guard={meta.guard.value} "
            f"attempts={meta.attempts_before}->{meta.attempts_after}",
            f"time: {meta.started_at} .. {meta.ended_at} ({duration_text(meta.duration_ms)})",
            f"tokens: in/out/cached={tokens_text(meta.tokens)} "
            f"cost_usd={'-' if meta.cost_usd is None else meta.cost_usd}",
        ]
        if meta.error_kind is not None:
            out.append(f"error: {meta.error_kind.value}: {flatten(meta.error or '', 300)}")
    if shown.output is None:
        out.append(f"output: {shown.output_problem}")
    else:
        status = shown.output.get("status")
        summary = shown.output.get("summary")
        out.append(f"output: status={status}")
        if isinstance(summary, str):
            out.append(f"summary: {flatten(summary, 300)}")
    out.append("files:")
    out += table(("NAME", "BYTES"), ((f.name, str(f.size)) for f in shown.files), indent="  ")
    for facts in shown.files:
        if facts.head is None:
            continue
        out.append(f"--- {facts.name} ({facts.size} bytes) ---")
        out += list(facts.head)
        if facts.truncated:
            out.append(f"[… more in {shown.directory}/{facts.name}]")
    return out


def show_iteration(
    paths: RunnerPaths, repo: Repo, iteration: int, run: str | None, as_json: bool
) -> None:
    """`runner show ITER`: one iteration's meta, output and the heads of its logs, its commit and
    the diff stat of the agent's work, from git when the directory is gone
    (runner_shell.views.history)."""
    from runner_shell.views.history import show_sourced_iteration

    run_id = choose_run(paths, load_run_state(paths), run)
    show_sourced_iteration(paths, repo, run_id, iteration, as_json)


# ---------------------------------------------------------------- runner report


def _node_rows(report: Report) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for row in report.nodes:
        stats = row.stats
        attempts = "-" if row.attempts is None else f"{row.attempts}/{row.max_attempts}"
        rows.append(
            (
                stats.node_id,
                row.state.value if row.state is not None else "-",
                str(stats.executions),
                str(stats.successful_executions),
                str(stats.failed_executions),
                str(stats.attempts_consumed),
                attempts,
                duration_text(stats.total_duration_ms),
                tokens_text(stats.tokens),
            )
        )
    return rows


def _retried_rows(retried: Sequence[NodeStats]) -> list[tuple[str, ...]]:
    return [(s.node_id, str(s.attempts_consumed), str(s.executions)) for s in retried]


def render_report(report: Report) -> list[str]:
    summary = report.summary
    tokens = summary.total_tokens
    cost = summary.total_cost_usd
    facts = [
        ("total_executions", str(summary.total_executions)),
        ("successful_executions", str(summary.successful_executions)),
        ("failed_executions", str(summary.failed_executions)),
        ("success_rate", f"{summary.success_rate:.1%}"),
        ("total_duration", duration_text(round(summary.total_duration * 1000))),
        ("total_tokens", f"input={tokens.input} output={tokens.output} cached={tokens.cached}"),
        ("nodes_executed", str(summary.nodes_executed)),
        ("execution_order", _run_groups(summary.execution_order)),
        ("attempts_consumed", str(summary.attempts_consumed)),
        ("runner_errors", str(summary.runner_errors)),
        ("agent_errors", str(summary.agent_errors)),
        ("guard_passes", str(summary.guard_passes)),
        ("guard_failures", str(summary.guard_failures)),
        ("total_cost_usd", "-" if cost is None else f"{cost:.4f}"),
        ("operator_actions", str(len(report.operator_actions))),
    ]
    out = [f"report: run={report.run_id}", "summary:"]
    out += table(("KEY", "VALUE"), facts, indent="  ")[1:]
    out.append("nodes:")
    if report.nodes:
        headers = ("NODE", "STATE", "EXEC", "OK", "FAILED", "CONSUMED", "ATTEMPTS", "DURATION")
        out += table((*headers, "TOKENS in/out/cached"), _node_rows(report), indent="  ")
    else:
        out.append("  none")
    out += budget_lines(report.budgets)
    if report.subtree_totals:
        out += rolled_up_lines(report.subtree_totals)
    out.append("slowest:")
    slow = [
        (
            str(r.iteration),
            r.node_id,
            duration_text(r.duration_ms),
            r.status.value,
            r.guard.value,
        )
        for r in report.slowest
    ]
    slow_heads = ("ITER", "NODE", "DURATION", "STATUS", "GUARD")
    out += table(slow_heads, slow, indent="  ") if slow else ["  none"]
    out.append("operator actions:")
    out += [
        f"  before iter {action.before_iteration}: {action_text(action)}"
        for action in report.operator_actions
    ] or ["  none"]
    out.append("most retried:")
    retried = _retried_rows(report.most_retried)
    retried_heads = ("NODE", "ATTEMPTS_CONSUMED", "EXECUTIONS")
    out += table(retried_heads, retried, indent="  ") if retried else ["  none"]
    return out


def report_document(
    paths: RunnerPaths, repo: Repo, run: str | None
) -> tuple[Report, tuple[str, ...]]:
    """The report of `runner report` and `GET /api/report`, and its warnings (also on stderr)."""
    figures, problems = run_figures(paths, repo, run)
    for line in problems:
        warn(line)
    return build_report(figures), problems


def show_report(paths: RunnerPaths, repo: Repo, run: str | None, as_json: bool) -> None:
    """`runner report`: the history summary, the per-node table, the slowest and most retried."""
    report, problems = report_document(paths, repo, run)
    if as_json:
        _print_json(report_to_json(report, problems))
    else:
        typer.echo("\n".join(render_report(report)))


def _night_status(
    view: StatusView, paths: RunnerPaths, journal: Journal | None, alive: bool
) -> None:
    from runner_shell.views.follow import running_status_lines

    lines = running_status_lines(paths, journal) if alive else ()
    for line in (*lines, *budget_lines(view.budgets)):
        typer.echo(line)


# ---------------------------------------------------------------- runner metrics


def show_metrics(paths: RunnerPaths, repo: Repo, run: str | None) -> None:
    """`runner metrics`: the report's figures in Prometheus text format, for a textfile
    collector (write to a temp file, then rename it into the collector's directory)."""
    typer.echo(metrics_document(paths, repo, run), nl=False)


def metrics_document(paths: RunnerPaths, repo: Repo, run: str | None) -> str:
    """`runner metrics` and `GET /metrics`: the Prometheus text; warns on stderr."""
    figures, problems = run_figures(paths, repo, run)
    for line in problems:
        warn(line)
    return metrics_text(figures)


# ---------------------------------------------------------------- runner loop on a terminal


class LiveProgress:
    """`runner loop`'s progress line on a terminal: drawn on stderr with `\\r`, wiped before
    each `loop:` line and at the end. Disabled, `emit` is plain `typer.echo` and there is no
    progress, so the output is byte-identical to a loop without it."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.drawn = False

    @property
    def progress(self) -> Callable[[str], None] | None:
        return self.show if self.enabled else None

    def show(self, line: str) -> None:
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def emit(self, line: str) -> None:
        self.clear()
        typer.echo(line)

    def __enter__(self) -> LiveProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.clear()
