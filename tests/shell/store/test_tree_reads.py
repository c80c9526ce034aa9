"""Reading the tree file: the cyclic collector is paused while it is decoded, and only then."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from runner_shell.store import state_files
from runner_shell.store.layout import RunnerPaths
from tests.helpers.trees import node, text_of

Read = TypeVar("Read")


def _paths_with_tree(tmp_path: Path) -> RunnerPaths:
    paths = RunnerPaths(tmp_path)
    paths.tree.parent.mkdir(parents=True)
    paths.tree.write_text(text_of(node("root", node("root.1"))), encoding="utf-8")
    return paths


def test_the_collector_is_paused_while_the_tree_is_decoded_and_running_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _paths_with_tree(tmp_path)
    seen: list[bool] = []
    paused = state_files.collector_paused

    def watched(read: Callable[[], Read]) -> Read:
        def noted() -> Read:
            seen.append(gc.isenabled())
            return read()

        return paused(noted)

    monkeypatch.setattr(state_files, "collector_paused", watched)
    assert state_files.read_tree_answer(paths).nodes == 2
    assert state_files.load_tree(paths).id == "root"
    assert seen == [False, False]
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    gc.disable()
    try:
        assert state_files.collector_paused(gc.isenabled) is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_runs_again_after_a_read_that_raises() -> None:
    def refused() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        state_files.collector_paused(refused)
    assert gc.isenabled()
