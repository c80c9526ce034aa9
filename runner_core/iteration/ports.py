"""What the shell provides an iteration: its clock, agent and guard runners and its files.

Decides the only ways the machine's effects touch the world, as Protocols the shell implements
(and tests implement with fakes). Never implements one: nothing here runs a process, reads a
clock or writes a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from runner_core.iteration.effects import (
    AgentFinished,
    Carried,
    CarryWork,
    Commit,
    ConfigRead,
    GuardFinished,
    HeadRead,
    NotStarted,
    PrepareIterationDir,
    ReadHead,
    RunAgent,
    RunGuard,
    ScratchListed,
    TreeRead,
    WriteContext,
    WriteIterationFile,
)
from runner_core.iteration.facts import ClockReading
from runner_core.iteration.recovery import Journal


class Clock(Protocol):
    def now(self) -> ClockReading: ...


class AgentRunner(Protocol):
    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted: ...


class GuardRunner(Protocol):
    def run_guard(self, effect: RunGuard, journal: Journal) -> GuardFinished | NotStarted: ...


class IterationStore(Protocol):
    """The files of `.runner/` and the repository's commit."""

    def prepare(self, effect: PrepareIterationDir) -> None: ...
    def write_context(self, effect: WriteContext) -> None: ...
    def write_journal(self, journal: Journal) -> None: ...
    def write_iteration_file(self, effect: WriteIterationFile) -> None: ...
    def read_tree(self) -> TreeRead: ...
    def read_config(self) -> ConfigRead: ...
    def restore_config(self, data: bytes) -> None: ...
    def read_head(self, effect: ReadHead) -> HeadRead: ...
    def carry_work(self, effect: CarryWork) -> Carried: ...
    def count_executions(self) -> Mapping[str, int]: ...
    def commit(self, effect: Commit) -> None: ...


class ScratchPort(Protocol):
    def list_scratch(self) -> ScratchListed: ...


@attrs.frozen(slots=True)
class IterationPorts:
    """The shell's side of an iteration: its clock, processes and files."""

    clock: Clock
    agents: AgentRunner
    guards: GuardRunner
    store: IterationStore
    scratch: ScratchPort | None = None  # None: the agent works in the run's own checkout
