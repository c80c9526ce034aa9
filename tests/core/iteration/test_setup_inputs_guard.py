"""`[sandbox] setup_inputs` in the iteration: an import that changes one asks for setup again
before the guard judges, and a setup that then fails is the agent's error, no guard judging.
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pmap

from runner_core.changes.import_rules import BaseEntry, EntryKind, ScratchEntry, ScratchListing
from runner_core.history.records import ErrorKind
from runner_core.iteration.effects import (
    Effect,
    GuardFinished,
    ListScratch,
    RunGuard,
    ScratchListed,
)
from runner_core.iteration.facts import ERROR_KIND, Failure, IterationFacts
from runner_core.iteration.machine import start_iteration
from runner_core.run.config import SandboxConfig
from runner_core.tree.model import GuardOutcome
from tests.core.iteration.test_guard_stage import drive, finished, guards, judged, report
from tests.core.iteration.test_iteration_machine import EXECUTOR_RESULTS, facts

NPM = SandboxConfig(setup=("npm", "ci"), setup_inputs=("package-lock.json", "package.json"))


def set_up(sandbox: SandboxConfig = NPM, scratch: bool = True) -> IterationFacts:
    start = facts()
    config = attrs.evolve(start.config, sandbox=sandbox)
    return attrs.evolve(start, config=config, scratch=scratch)


def listed(*paths: str, deleted: str | None = None) -> ScratchListed:
    """The agent changed `paths` (each in the base before) and deleted `deleted`."""
    base = {path: BaseEntry("100644", "1" * 40, 3) for path in (*paths, deleted) if path}
    entries = tuple(ScratchEntry(path, EntryKind.FILE, 4, "2" * 40) for path in paths)
    return ScratchListed(ScratchListing(entries, pmap(base)))


def judge(start: IterationFacts, listing: ScratchListed, guard: GuardFinished) -> list[Effect]:
    results = {**EXECUTOR_RESULTS, ListScratch: listing, RunGuard: guard}
    effects, _ = drive(start_iteration(start), results)
    return list(effects)


@pytest.mark.parametrize(
    ("listing", "asked"),
    [
        (listed("package.json", "src/a.js"), ("package.json",)),
        (listed("package-lock.json", "package.json"), ("package-lock.json", "package.json")),
        (listed("src/a.js", deleted="package-lock.json"), ("package-lock.json",)),
        (listed("src/a.js", "app/package.json"), ()),
    ],
    ids=["one", "both", "deleted", "none"],
)
def test_the_guard_is_told_which_setup_inputs_the_import_changes(
    listing: ScratchListed, asked: tuple[str, ...]
) -> None:
    effects = judge(set_up(), listing, judged(report(a="passed"), 0))

    (guard,) = guards(effects)
    assert guard.setup_inputs == asked


@pytest.mark.parametrize(
    "start",
    [
        set_up(SandboxConfig(setup=("npm", "ci"))),
        set_up(scratch=False),
    ],
    ids=["no setup_inputs", "no scratch checkout"],
)
def test_no_setup_runs_again_without_inputs_or_a_slot(start: IterationFacts) -> None:
    effects = judge(start, listed("package.json"), judged(report(a="passed"), 0))

    assert all(guard.setup_inputs == () for guard in guards(effects))


def test_a_setup_failing_on_the_agents_inputs_is_its_error_naming_the_command() -> None:
    failed = GuardFinished(None, False, setup_failed="exited 1; see /it/setup.log")

    effects = judge(set_up(), listed("package.json"), failed)

    end = finished(effects)
    assert end.outcome.runner_error is None
    assert end.outcome.agent_error == (
        "[sandbox] setup (npm ci) failed after the agent changed package.json: exited 1; see "
        "/it/setup.log (make setup succeed on them, or change [sandbox] setup in "
        ".runner/state/config.toml)"
    )
    assert end.outcome.guard is GuardOutcome.SKIPPED
    assert end.outcome.tree.children[1].attempts == 1
    assert ERROR_KIND[Failure.SETUP_FAILED] is ErrorKind.AGENT
