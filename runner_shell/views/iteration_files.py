"""Reading one iteration directory for `runner show`: its meta.json, output.json, every file's
size and the first lines of each log.

Never reads more of a log than LOG_HEAD_BYTES, nor a JSON file over SMALL_JSON_MAX_BYTES, so a
huge or hostile file costs no more than a small one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner_core.backends.egress import NETWORK_LOG, Refusal, refusals
from runner_core.history.records import DamagedRecord, record_from_meta
from runner_core.iteration.guard_stage import read_outcome_document
from runner_core.json_text import json_value
from runner_core.views.show import FileFacts, IterationFiles, iterations_text
from runner_shell.errors import UserFacingError
from runner_shell.store.files import FileTooLarge, open_regular, read_bytes_capped
from runner_shell.store.iteration_log import iteration_dirs
from runner_shell.store.layout import RunnerPaths

LOG_HEAD_BYTES = 8 * 1024
LOG_HEAD_LINES = 20
LOG_LINE_CHARS = 400
# meta.json and output.json are small; larger ones are reported, not loaded.
SMALL_JSON_MAX_BYTES = 1024 * 1024
# tests.json holds one entry per test: room for the largest report a guard may write.
TESTS_JSON_MAX_BYTES = 64 * 1024 * 1024
# network.log holds at most a thousand lines of a few hundred bytes (runner_shell.sandbox.proxy).
NETWORK_LOG_MAX_BYTES = 4 * 1024 * 1024


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
        return json_value(read_bytes_capped(path, SMALL_JSON_MAX_BYTES)), None
    except FileNotFoundError:
        return None, "missing"
    except FileTooLarge as error:
        return None, f"{error.size} bytes; at most {error.limit} are read"
    except (OSError, ValueError) as error:
        return None, f"unreadable: {error}"


def _tests_document(path: Path) -> dict[str, object] | None:
    """tests.json as the runner wrote it, None when absent or not of its shape (the file is
    in the repository: anyone may have edited it)."""
    try:
        text = read_bytes_capped(path, TESTS_JSON_MAX_BYTES).decode("utf-8")
    except (OSError, ValueError):
        return None
    return read_outcome_document(text)


def _network_refusals(path: Path) -> tuple[Refusal, ...]:
    """network.log's refusals; none when it is absent or unreadable (the agent's proxy writes
    at most MAX_LOGGED lines, far under the cap)."""
    try:
        text = read_bytes_capped(path, NETWORK_LOG_MAX_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ()
    return refusals(text)


def read_iteration(paths: RunnerPaths, run_id: str, iteration: int) -> IterationFiles:
    directory = paths.iter_dir(run_id, iteration)
    if not directory.is_dir():
        numbers = [number for number, _ in iteration_dirs(paths, run_id)]
        raise UserFacingError(
            f"no iteration {iteration} in run {run_id} "
            f"(iterations on disk: {iterations_text(numbers)})"
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
    tests = _tests_document(directory / "tests.json")
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
        tests=tests,
        network=_network_refusals(directory / NETWORK_LOG),
    )
