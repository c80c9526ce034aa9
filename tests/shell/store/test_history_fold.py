"""A long-lived reader's history fold (runner_shell/store/history_fold.py, kept by `runner
serve`): each reading gives what a fresh `load_history` gives, reading only the iteration
directories that are new or had no record; a directory gone or replaced, another run or an old
whole reading fall back to reading the whole history."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runner_core.history.execution import record_to_meta
from runner_shell.store import iteration_log
from runner_shell.store.history_fold import FULL_READ_SECS, HistoryFold
from runner_shell.store.iteration_log import load_history
from runner_shell.store.layout import RunnerPaths
from tests.helpers.records import record

RUN = "run-1"
LONG_AGO_NS = 10**18  # 2001: a run directory's stamp old enough to be trusted


def write_meta(paths: RunnerPaths, iteration: int, node: str = "root.1") -> Path:
    directory = paths.iter_dir(RUN, iteration)
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / "meta.json.tmp"
    temporary.write_text(json.dumps(record_to_meta(record(iteration, node))), encoding="utf-8")
    temporary.replace(directory / "meta.json")
    return directory / "meta.json"


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = iteration_log._record_or_problem

    def reading(*args: object) -> object:
        reads.append(str(args[-1]))
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(iteration_log, "_record_or_problem", reading)
    return reads


def started(tmp_path: Path, count: int) -> tuple[RunnerPaths, HistoryFold]:
    paths = RunnerPaths(tmp_path)
    for n in range(1, count + 1):
        write_meta(paths, n)
    fold = HistoryFold()
    assert fold.read(paths, RUN) == load_history(paths, RUN)
    return paths, fold


def test_a_new_iteration_is_read_alone_and_folded_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, fold = started(tmp_path, 3)
    reads = counting_reads(monkeypatch)
    write_meta(paths, 4, "root.2")
    history, problems = fold.read(paths, RUN)
    assert reads == ["4"]
    assert (history, problems) == load_history(paths, RUN)
    assert history.records_for("root.2") == (history.records[3],)
    assert fold.folds == 1


def test_nothing_new_gives_back_the_very_same_history(tmp_path: Path) -> None:
    paths, fold = started(tmp_path, 2)
    first, _ = fold.read(paths, RUN)
    again, _ = fold.read(paths, RUN)
    assert again is first


def test_an_iteration_in_progress_is_read_again_until_its_meta_json_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, fold = started(tmp_path, 2)
    paths.iter_dir(RUN, 3).mkdir()
    _, problems = fold.read(paths, RUN)
    assert problems == load_history(paths, RUN)[1]
    assert problems and "3/meta.json: missing" in problems[0]
    # Its meta.json is written inside its own directory: the run directory does not change.
    os.utime(paths.run_dir(RUN), ns=(LONG_AGO_NS, LONG_AGO_NS))
    fold.read(paths, RUN)
    reads = counting_reads(monkeypatch)
    write_meta(paths, 3)
    folded = fold.read(paths, RUN)
    assert fold.read(paths, RUN)[1] == ()
    assert reads == ["3"]
    assert folded == load_history(paths, RUN)


def test_a_job_that_ends_after_a_later_one_takes_its_place_in_order(tmp_path: Path) -> None:
    paths, fold = started(tmp_path, 2)
    paths.iter_dir(RUN, 3).mkdir()
    write_meta(paths, 4)
    fold.read(paths, RUN)
    write_meta(paths, 3)
    history, problems = fold.read(paths, RUN)
    assert [r.iteration for r in history.records] == [1, 2, 3, 4]
    assert (history, problems) == load_history(paths, RUN)


def test_an_entry_that_is_no_iteration_is_the_same_warning_as_a_fresh_reading_gives(
    tmp_path: Path,
) -> None:
    paths, fold = started(tmp_path, 2)
    (paths.run_dir(RUN) / "notes.txt").write_text("hi\n", encoding="utf-8")
    _, problems = fold.read(paths, RUN)
    assert problems == load_history(paths, RUN)[1]
    assert problems[0].endswith("notes.txt: not an iteration directory; skipped")


@pytest.mark.parametrize("rewrite", ["removed", "replaced"])
def test_a_history_rewrite_falls_back_to_reading_the_whole_history(
    tmp_path: Path, rewrite: str
) -> None:
    paths, fold = started(tmp_path, 3)
    whole_read_at = fold.read_at
    fold.clock = lambda: whole_read_at + 1.0  # long before the next periodic whole reading
    directory = paths.iter_dir(RUN, 2)
    if rewrite == "removed":
        shutil.rmtree(directory)
    else:  # set aside as `runner recover` sets an interrupted one aside, a new one in its place
        directory.rename(directory.with_name("2.interrupted-1"))
        write_meta(paths, 2, "root.9")
    history, problems = fold.read(paths, RUN)
    assert (history, problems) == load_history(paths, RUN)
    assert fold.folds == 0 and fold.read_at == whole_read_at + 1.0
    nodes = [r.node_id for r in history.records]
    assert nodes == (
        ["root.1", "root.1"] if rewrite == "removed" else ["root.1", "root.9", "root.1"]
    )


def test_a_hand_edited_meta_json_is_seen_by_the_next_whole_reading(tmp_path: Path) -> None:
    paths, fold = started(tmp_path, 2)
    now = fold.read_at
    fold.clock = lambda: now + 1.0
    write_meta(paths, 1, "root.7")
    assert fold.read(paths, RUN)[0].records[0].node_id == "root.1"  # trusted as recorded
    fold.clock = lambda: now + FULL_READ_SECS
    assert fold.read(paths, RUN) == load_history(paths, RUN)
    assert fold.read(paths, RUN)[0].records[0].node_id == "root.7"


def test_another_run_is_read_whole(tmp_path: Path) -> None:
    paths, fold = started(tmp_path, 2)
    assert fold.read(paths, "run-2") == load_history(paths, "run-2")
    assert fold.read(paths, RUN) == load_history(paths, RUN)
    assert fold.folds == 0
