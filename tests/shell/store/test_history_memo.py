"""A long-lived reader's history memo (`load_history(..., memo)`, kept by `runner serve`):
the same history as a fresh reading, each meta.json read once until it changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner_core.history.execution import record_to_meta
from runner_shell.store import iteration_log
from runner_shell.store.iteration_log import RecordMemo, load_history
from runner_shell.store.layout import RunnerPaths
from tests.helpers.records import record

RUN = "run-1"


def write_meta(paths: RunnerPaths, iteration: int, node: str = "root.1") -> Path:
    directory = paths.iter_dir(RUN, iteration)
    directory.mkdir(parents=True, exist_ok=True)
    meta = directory / "meta.json"
    temporary = directory / "meta.json.tmp"
    temporary.write_text(json.dumps(record_to_meta(record(iteration, node))), encoding="utf-8")
    temporary.replace(meta)  # as the runner writes it: a new file renamed into place
    return meta


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = iteration_log._record_or_problem

    def reading(*args: object) -> object:
        reads.append(str(args[-1]))
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(iteration_log, "_record_or_problem", reading)
    return reads


def test_the_memo_reads_only_what_is_new_or_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = RunnerPaths(tmp_path)
    for n in (1, 2, 3):
        write_meta(paths, n)
    reads = counting_reads(monkeypatch)
    memo: RecordMemo = {}
    load_history(paths, RUN, memo)
    assert reads == ["1", "2", "3"]
    write_meta(paths, 4)
    second, problems = load_history(paths, RUN, memo)
    assert reads == ["1", "2", "3", "4"]
    # A meta.json replaced (a recovery, a hand edit) is read again.
    write_meta(paths, 2, node="root.2")
    third, _ = load_history(paths, RUN, memo)
    assert reads == ["1", "2", "3", "4", "2"]
    assert problems == ()
    assert [r.iteration for r in second.records] == [1, 2, 3, 4]
    assert third.records[1].node_id == "root.2"
    assert third == load_history(paths, RUN)[0]
    assert set(memo) == {(RUN, name) for name in ("1", "2", "3", "4")}


def test_a_meta_that_goes_bad_is_reported_as_without_a_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = RunnerPaths(tmp_path)
    for n in (1, 2):
        write_meta(paths, n)
    memo: RecordMemo = {}
    load_history(paths, RUN, memo)
    meta = paths.iter_dir(RUN, 2) / "meta.json"
    meta.write_text("{damaged", encoding="utf-8")
    with_memo = load_history(paths, RUN, memo)
    assert with_memo == load_history(paths, RUN)
    assert len(with_memo[1]) == 1 and "2/meta.json" in with_memo[1][0]
    assert set(memo) == {(RUN, "1")}
    os.remove(meta)
    assert load_history(paths, RUN, memo) == load_history(paths, RUN)
