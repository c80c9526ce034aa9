"""What the shell reports back after an effect, as data: every result and the `Result` union.

Decides which results may answer which effect (`ANSWERS`): a process run ends, could not
start or failed on I/O; a read returns its bytes; a write answers `Done`. Never interprets a
result: the machine does, one stage at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from runner_core.backends.limits import LimitSignal
from runner_core.changes.import_rules import Change, ScratchListing
from runner_core.guard.report import TestReport
from runner_core.history.records import TokenUsage
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
from runner_core.iteration.git_drift import BranchSeen


@attrs.frozen(slots=True)
class Done:
    """The effect was carried out and has nothing to report."""


@attrs.frozen(slots=True)
class AgentFinished:
    exit_code: int | None
    timed_out: bool
    output_text: str | None
    output_problem: str | None
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    process_group: int | None = None
    limit: LimitSignal | None = None  # the usage or rate limit the backend recognised
    interrupted: str | None = None  # the signal that stopped the agent, when one did
    wait_problem: str | None = None  # why the wait file a command agent wrote is not one
    # The output file was a symlink, FIFO or directory when read (`output_problem` says which
    # file): something only the agent makes.
    output_planted: bool = False
    # The `[sandbox]` limit the session reached (`pids_max`, `memory_mb`, `tmp_mb`), which
    # ended it; None for none.
    sandbox_limit: str | None = None


@attrs.frozen(slots=True)
class GuardFinished:
    exit_code: int | None
    timed_out: bool
    process_group: int | None = None
    interrupted: str | None = None  # the signal that stopped the guard, when one did
    report: TestReport | None = None  # the report it wrote, when it wrote a readable one
    report_problem: str | None = None  # why the report it wrote could not be read
    sandbox_limit: str | None = None  # the `[sandbox]` limit the guard reached, which ended it
    # How `[sandbox] setup`, run again before the guard on the agent's changed inputs, failed
    # (`exited 1; see <log>`): the guard did not run.
    setup_failed: str | None = None


@attrs.frozen(slots=True)
class TreeRead:
    """tree.json's bytes, or why it could not be read (deleted, too large)."""

    data: bytes
    problem: str | None = None


@attrs.frozen(slots=True)
class ConfigRead:
    data: bytes | None  # None: deleted or replaced by something unreadable


@attrs.frozen(slots=True)
class ExecutionsCounted:
    counts: Mapping[str, int]


@attrs.frozen(slots=True)
class HeadRead:
    """The run's checkout and branch as git says them now."""

    seen: BranchSeen


@attrs.frozen(slots=True)
class Carried:
    """The agent's changes carried onto the operator's commits, and the paths left out."""

    changes: tuple[Change, ...]
    conflicts: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class NotStarted:
    """The process could not be started; `message` is one line naming the program."""

    message: str


@attrs.frozen(slots=True)
class IoFailed:
    message: str


@attrs.frozen(slots=True)
class ScratchListed:
    """The scratch checkout as the shell listed it: every path's kind, size and blob."""

    listing: ScratchListing


Result = (
    Done
    | AgentFinished
    | GuardFinished
    | TreeRead
    | ConfigRead
    | HeadRead
    | Carried
    | ExecutionsCounted
    | ScratchListed
    | NotStarted
    | IoFailed
)


# Any effect may fail on I/O; a process may also fail to start.
ANSWERS: Mapping[type, tuple[type, ...]] = MappingProxyType(
    {
        PrepareIterationDir: (Done, IoFailed),
        WriteContext: (Done, IoFailed),
        WriteJournal: (Done, IoFailed),
        WriteIterationFile: (Done, IoFailed),
        RunAgent: (AgentFinished, NotStarted, IoFailed),
        ReadTree: (TreeRead, IoFailed),
        RunGuard: (GuardFinished, NotStarted, IoFailed),
        ReadConfig: (ConfigRead, IoFailed),
        RestoreConfig: (Done, IoFailed),
        ReadHead: (HeadRead, IoFailed),
        CarryWork: (Carried, IoFailed),
        CountExecutions: (ExecutionsCounted, IoFailed),
        ListScratch: (ScratchListed, IoFailed),
        Commit: (Done, IoFailed),
    }
)
