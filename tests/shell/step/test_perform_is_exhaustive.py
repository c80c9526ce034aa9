"""The interpreter cannot skip an effect: `perform` matches every member of the `Action` union.

An effect the core adds and the shell does not carry out fails mypy at `perform`'s
`assert_never`, and an object that is no effect at all raises at run time: nothing is ever
answered `Done()` without having been done.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
import types
from pathlib import Path

import pytest
from mypy import api as mypy_api

from runner_core.iteration.recovery import Journal, JournalPhase
from runner_shell.step.runner import perform
from tests.helpers import ROOT

JOURNAL = Journal("run-1", 1, "leaf", "executor", JournalPhase.RUNNING, "", 1, "runner step")

# perform's own source, checked against the shipped union or one with an effect added.
PREAMBLE = '''
from __future__ import annotations

from typing import assert_never

import attrs

from runner_core.iteration.effects import Action as ShippedAction
from runner_core.iteration.effects import (
    CarryWork,
    Commit,
    CountExecutions,
    ListScratch,
    PrepareIterationDir,
    ReadConfig,
    ReadHead,
    ReadTree,
    RestoreConfig,
    RunAgent,
    RunGuard,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.ports import IterationPorts
from runner_core.iteration.recovery import Journal
from runner_core.iteration.effects import Done, IoFailed, Result


@attrs.frozen(slots=True)
class SendPostcard:
    """An effect the core might add one day."""

'''


def mypy_on(action_union: str, tmp_path: Path) -> tuple[str, int]:
    source = PREAMBLE + f"\nAction = {action_union}\n\n\n" + inspect.getsource(perform)
    module = tmp_path / "perform_copy.py"
    module.write_text(source, encoding="utf-8")
    # mypy raises the interpreter's recursion limit for good: put it back, or a later test of a
    # too-deep tree in this process finds the limit it pins moved.
    limit = sys.getrecursionlimit()
    try:
        cache = ["--cache-dir", str(ROOT / ".mypy_cache")]
        out, err, status = mypy_api.run(["--strict", *cache, "--no-error-summary", str(module)])
    finally:
        sys.setrecursionlimit(limit)
    return out + err, status


def test_perform_with_the_shipped_effects_type_checks(tmp_path: Path) -> None:
    report, status = mypy_on("ShippedAction", tmp_path)

    assert (report, status) == ("", 0)


def test_an_effect_perform_does_not_carry_out_fails_mypy(tmp_path: Path) -> None:
    report, status = mypy_on("ShippedAction | SendPostcard", tmp_path)

    assert status == 1
    assert 'Argument 1 to "assert_never" has incompatible type "SendPostcard"' in report, report


@pytest.mark.parametrize("unknown", [object(), "RunAgent", None])
def test_perform_raises_on_what_is_no_effect(unknown: object) -> None:
    ports = types.SimpleNamespace(
        records=None, reader=None, committer=None, agents=None, guards=None, clock=None
    )

    with pytest.raises(AssertionError, match="Expected code to be unreachable"):
        perform(unknown, JOURNAL, ports)  # type: ignore[arg-type]


def test_the_copy_checked_is_perform_as_shipped() -> None:
    source = textwrap.dedent(inspect.getsource(perform))

    assert source.startswith("def perform(action: Action, journal: Journal, ports: IterationPorts)")
    assert "case _ as unknown:\n                assert_never(unknown)" in source
