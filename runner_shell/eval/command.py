"""`runner eval`: every case x backend x prompt variant x run, in parallel up to `jobs`, then the
summary as text, JSON and HTML under eval-results/<eval-id>/.

Every case and config is checked before the first run starts. SIGINT stops the runs under way
(their directories stay without meta.json); `--resume` runs again only what is unfinished.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import attrs

from runner_core.eval.html import summary_html
from runner_core.eval.summary import compare_lines, render_table, run_from_json, summary_document
from runner_core.run.exit_codes import ExitCode
from runner_shell.errors import UserFacingError
from runner_shell.eval.case import Case, load_case
from runner_shell.eval.run import Processes, Variant, check_config, run_one
from runner_shell.store.files import atomic_write_text

Echo = Callable[[str], None]
LAB_CACHE = "lab-cache"  # runner_shell.eval.lab's, beside the evals
TEMPLATE_NAMES = ("decomposer.md.j2", "executor.md.j2")
ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@attrs.frozen(slots=True)
class Job:
    case: Case
    variant: Variant
    number: int

    def directory(self, root: Path) -> Path:
        return root / self.case.id / self.variant.name / str(self.number)


def new_eval_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def _latest(results: Path) -> str:
    """The newest eval under `results` (ids sort by time); the lab's cache is none."""
    found = sorted(
        entry.name
        for entry in (results.iterdir() if results.is_dir() else ())
        if entry.is_dir() and entry.name != LAB_CACHE
    )
    if not found:
        raise UserFacingError(f"eval: --resume: {results}/ holds no eval to resume (give --id)")
    return found[-1]


def plan_jobs(
    case_paths: Sequence[Path], backends: Sequence[str], prompts: Sequence[Path], runs: int
) -> list[Job]:
    """Every combination, checked before any run: cases, their configs, the prompt variants."""
    from runner_shell.step.prompt_templates import compile_template

    cases = [load_case(path) for path in case_paths]
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            raise UserFacingError(
                f"eval: {case.shown}: case.id: '{case.id}' is also the id of {seen[case.id]}"
            )
        seen[case.id] = case.shown
    for directory in prompts:
        if not directory.is_dir():
            raise UserFacingError(f"eval: --prompts {directory}: is not a directory")
        templates = sorted(directory / name for name in TEMPLATE_NAMES)
        found = [template for template in templates if template.is_file()]
        if not found:
            raise UserFacingError(
                f"eval: --prompts {directory}: holds no executor.md.j2 or decomposer.md.j2"
            )
        stray = sorted(
            entry.name for entry in directory.iterdir() if entry.name not in TEMPLATE_NAMES
        )
        if stray:
            raise UserFacingError(
                f"eval: --prompts {directory}: {stray[0]} is no template the runner reads "
                "(executor.md.j2, decomposer.md.j2)"
            )
        for template in found:
            compile_template(str(template), template.read_bytes())
    names = [directory.name for directory in prompts]
    if len(set(names)) != len(names):
        raise UserFacingError("eval: --prompts: two variants have the same directory name")
    variants = [
        Variant(backend, directory)
        for backend in backends
        for directory in ([*prompts] if prompts else [None])
    ]
    for case in cases:
        for backend in backends:
            check_config(case, backend)
    return [
        Job(case, variant, number)
        for case in cases
        for variant in variants
        for number in range(1, runs + 1)
    ]


def finished_meta(directory: Path) -> dict[str, Any] | None:
    """A finished run's meta.json; None when it is unfinished (no meta.json, or unreadable)."""
    try:
        meta: dict[str, Any] = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta


def progress_line(meta: dict[str, Any], done: int, total: int) -> str:
    return (
        f"eval: [{done}/{total}] case={meta['case']} variant={meta['variant']} "
        f"run={meta['run']} outcome={meta['outcome']} iterations={meta['iterations']} "
        f"cost_usd={meta['cost_usd']:.4f} wall={meta['wall_secs']:.1f}s"
    )


class _Progress:
    """One line per finished run; on a terminal, a rich progress bar beneath them."""

    def __init__(self, total: int, echo: Echo, live: bool) -> None:
        self.total, self.echo, self.done = total, echo, 0
        self._bar: Any = None
        if live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._bar = Progress(
                "eval", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
            )
            self._task = self._bar.add_task("runs", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def finished(self, meta: dict[str, Any], resumed: bool = False) -> None:
        self.done += 1
        line = progress_line(meta, self.done, self.total) + (
            " (finished before)" if resumed else ""
        )
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
            self._bar.update(self._task, completed=self.done)
        else:
            self.echo(line)


@attrs.frozen(slots=True)
class EvalPlan:
    """What `runner eval` was asked to run."""

    cases: Sequence[Path]
    backends: Sequence[str]
    prompts: Sequence[Path]
    runs: int
    jobs: int
    keep: bool


def _results_root(results: Path, eval_id: str | None, resume: bool) -> tuple[str, Path]:
    if eval_id is None:
        eval_id = _latest(results) if resume else new_eval_id()
    if set(eval_id) - ID_CHARS or eval_id.startswith("."):
        raise UserFacingError(f"eval: --id {eval_id!r}: use letters, digits, . _ -")
    root = results / eval_id
    if root.exists() and not resume and any(root.iterdir()):
        raise UserFacingError(
            f"eval: {root}/ already holds results: add --resume to finish it, or give a new --id"
        )
    root.mkdir(parents=True, exist_ok=True)
    return eval_id, root


def run_eval(
    plan: EvalPlan,
    results: Path,
    eval_id: str | None,
    resume: bool,
    as_json: bool,
    echo: Echo,
) -> int:
    """`runner eval`; returns the exit code (0 when every run finished, whatever its outcome)."""
    planned = plan_jobs(plan.cases, plan.backends or ["command"], plan.prompts, plan.runs)
    eval_id, root = _results_root(results, eval_id, resume)
    say = (lambda _line: None) if as_json else echo
    say(f"eval: id={eval_id} runs={len(planned)} results={root}")
    metas: list[dict[str, Any]] = []
    with _Progress(len(planned), say, sys.stdout.isatty() and not as_json) as progress:
        todo = []
        for job in planned:
            meta = finished_meta(job.directory(root)) if resume else None
            if meta is None:
                todo.append(job)
            else:
                metas.append(meta)
                progress.finished(meta, resumed=True)
        try:
            metas += _run_jobs(todo, root, plan, progress)
        except KeyboardInterrupt:
            raise UserFacingError(
                f"eval: interrupted after {progress.done} of {len(planned)} runs; finish with "
                f"'runner eval ... --resume --id {eval_id}' (finished runs are kept)",
                ExitCode.INTERRUPTED,
            ) from None
    document = summary_document(eval_id, [run_from_json(meta) for meta in metas])
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    atomic_write_text(root / "summary.json", text)
    atomic_write_text(root / "summary.html", summary_html(document))
    table = render_table(document["rows"])
    atomic_write_text(root / "summary.txt", "\n".join(table) + "\n")
    if as_json:
        echo(text.rstrip("\n"))
        return ExitCode.OK
    for line in table:
        echo(line)
    echo(f"eval: summary {root / 'summary.json'} {root / 'summary.html'}")
    return ExitCode.OK


def _run_jobs(
    todo: Sequence[Job], root: Path, plan: EvalPlan, progress: _Progress
) -> list[dict[str, Any]]:
    """The runs of `todo`, `plan.jobs` at a time; on an interrupt every one under way is
    stopped (its directory keeps no meta.json) before KeyboardInterrupt goes on."""
    processes = Processes()
    metas = []
    pending = list(todo)
    running: dict[Future[dict[str, Any]], Job] = {}
    with ThreadPoolExecutor(max_workers=plan.jobs) as pool:
        try:
            while pending or running:
                while pending and len(running) < plan.jobs:
                    job = pending.pop(0)
                    out = job.directory(root)
                    args = (job.case, job.variant, job.number, out, processes, plan.keep)
                    running[pool.submit(run_one, *args)] = job
                done, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    running.pop(future)
                    metas.append(future.result())
                    progress.finished(metas[-1])
        except KeyboardInterrupt:
            processes.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return metas


def _summary_of(path: Path) -> dict[str, Any]:
    target = path / "summary.json" if path.is_dir() else path
    try:
        document: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserFacingError(f"eval: --compare {path}: cannot be read: {error.strerror}") from None
    except ValueError as error:
        raise UserFacingError(f"eval: --compare {target}: is not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
        raise UserFacingError(f"eval: --compare {target}: is not a runner eval summary")
    return document


def compare(before: Path, after: Path, echo: Echo) -> int:
    """`runner eval --compare A B`: A's and B's rows side by side."""
    for line in compare_lines(_summary_of(before), _summary_of(after)):
        echo(line)
    return ExitCode.OK
