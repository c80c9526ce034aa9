"""What the shell provides an iteration: the only ways its effects touch the world.

Declares one small Protocol per concern (the clock, the agent's and the guard's processes, the
records the runner keeps while the iteration runs, the reading of the repository the agent left,
the commit, the scratch checkout's listing) and `IterationPorts`, which holds them. Each method
carries out one effect exactly as asked and answers it with a result of `effects`; a failure the
machine must decide about comes back as a result (`IoFailed`, `NotStarted`, `CommitFailed`),
never as an exception. The one exception a port may let through is `OSError` from the disk,
which the interpreter answers as `IoFailed` with the error's text. Nothing here decides what an
answer means: the machine's steps do.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from runner_core.iteration.effects import (
    AgentFinished,
    Carried,
    CarryWork,
    Commit,
    CommitFailed,
    ConfigRead,
    Done,
    ExecutionsCounted,
    GuardFinished,
    HeadRead,
    IoFailed,
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
    def now(self) -> ClockReading:
        """Read the clocks once: a monotonic reading and the UTC time it is.

        The machine measures the shared deadline of agent and guard on the monotonic reading
        and stamps records and events with the UTC one. Never fails and never sleeps.
        """
        ...


class AgentRunner(Protocol):
    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted:
        """Run the role's agent on the iteration's prompt until it ends or `effect.timeout_secs`
        pass, and say how it ended.

        `journal` is the iteration's journal as the machine holds it: the moment the agent's
        process group exists, the port writes it again with that group added, so that
        'runner recover' can end a session the runner did not live to see end.

        :returns: `AgentFinished` once the process ran, however it ended (a non-zero exit, a
            timeout, a signal, a usage limit, an output past `effect.limit_bytes` are all in
            it, read from the files the agent left); `NotStarted` when the process could not be
            started, with one line naming the program.

        Never judges the output nor decides whose error a finish is: the machine does. Never
        runs the agent unconfined when a sandbox is set.
        """
        ...


class GuardRunner(Protocol):
    def run_guard(self, effect: RunGuard, journal: Journal) -> GuardFinished | NotStarted:
        """Run the guard command `effect.argv` in the agent's checkout until it ends or
        `effect.timeout_secs` pass, and say how it ended.

        A BASELINE run is at the base commit and the checkout is put back after it; with
        `effect.setup_inputs`, `[sandbox] setup` runs again first. `journal` is written again
        with the guard's process group as soon as it exists, as `AgentRunner.run_agent` does.

        :returns: `GuardFinished` once the guard ran (its exit code, a timeout, a signal, the
            report it wrote at `effect.report_name` when readable, or why setup failed and it
            did not run); `NotStarted` when it could not be started.

        Never decides whether the guard passed: in ratchet mode that is the machine's reading
        of the report.
        """
        ...


class IterationRecords(Protocol):
    """Writes what the runner keeps of the iteration while it runs: its directory under
    `.runner/iterations/<run>/`, the context files, the journal in the git directory and the
    iteration directory's own files. Writes nowhere else and never into the repository's
    history. Each method answers nothing on success (the interpreter answers `Done`) and lets
    a disk failure through as `OSError` (answered `IoFailed`)."""

    def prepare(self, effect: PrepareIterationDir) -> None:
        """Create the iteration directory, first renaming a left-over one of an interrupted
        run to `effect.set_aside_as` beside it (kept for inspection, never reused).

        Never follows a symlink on the way: a run directory replaced by one is refused with
        `OSError` (`UnsafePath`) rather than written through.
        """
        ...

    def write_context(self, effect: WriteContext) -> None:
        """Write `effect.files` into `.runner/context/` and remove `effect.remove` from it, in
        the run's checkout and, when the agent works in a scratch checkout, in that one too.

        A symlink in place of the context directory is removed, never followed.
        """
        ...

    def write_journal(self, journal: Journal) -> None:
        """Write `journal` durably, where 'runner recover' looks for it (a parallel job's own
        journal file while the job runs). Must be on disk before the agent starts."""
        ...

    def write_iteration_file(self, effect: WriteIterationFile) -> None:
        """Write `effect.text` as the file `effect.name` of the iteration directory, atomically,
        or append it to that file when `effect.append`. Never writes outside the directory."""
        ...


class RepositoryReader(Protocol):
    """Reads the run's repository as the agent and the guard left it: tree.json, config.toml,
    HEAD and the branch, the run's recorded iterations. Writes nothing anywhere. A reading the
    agent made impossible is an answer the machine judges, not a failure."""

    def read_tree(self) -> TreeRead:
        """tree.json's bytes as the agent left it, in whichever checkout it worked.

        :returns: `TreeRead(data)`; `TreeRead(b"", problem)` when it is gone, replaced by
            something unreadable or grown past the limit, `problem` the line saying which
            (the agent's error, which the machine records).
        """
        ...

    def read_config(self) -> ConfigRead:
        """config.toml's bytes now, to see whether the agent changed it.

        :returns: `ConfigRead(data)`; `ConfigRead(None)` when it is deleted or replaced by
            something unreadable (the machine puts it back).
        """
        ...

    def read_head(self, effect: ReadHead) -> HeadRead | IoFailed:
        """The run's checkout and branch as git says them now, against `effect.before`: the
        checkout's HEAD, the branch's commit, and when it moved forward from `effect.before`'s
        commit the paths the commits between changed.

        :returns: `HeadRead`; `IoFailed` with git's one line when git cannot answer (the
            machine aborts, the journal left for 'runner recover').

        Never moves HEAD, a ref or a file: the machine decides what a moved branch means.
        """
        ...

    def count_executions(self) -> ExecutionsCounted:
        """How many iterations of the run each node has recorded, read from the iteration
        directories' records; asked only of a run state written before it kept the counts."""
        ...


class Committer(Protocol):
    """Makes the iteration's commit and what it takes of the repository: config.toml as the
    user left it, the agent's work carried onto commits the operator made meanwhile, then the
    final write-set and the commit. Never decides what is written or committed: `Commit` says
    it, file by file and in order."""

    def restore_config(self, data: bytes) -> None:
        """Put config.toml back to `data`, atomically: it belongs to the user and the runner,
        never to the agent. Answers nothing; a disk failure is `OSError` (`IoFailed`)."""
        ...

    def carry_work(self, effect: CarryWork) -> Carried | IoFailed:
        """The agent's `effect.changes`, made from commit `effect.base`, carried onto commit
        `effect.onto` as a parallel job's are: a file both sides changed merged line by line.

        :returns: `Carried` with the changes to commit on `effect.onto` and the paths that
            conflict (left out); `IoFailed` with git's one line when git fails.

        Stores merged blobs in the repository's objects only: moves no ref, touches no work tree.
        """
        ...

    def commit(self, effect: Commit) -> Done | CommitFailed:
        """Carry out the iteration's end in its order: the journal `effect.writing`, every file
        of `effect.files` atomically, the journal `effect.committing`, the attempt's commit on
        its own ref first when `effect.attempt` asks for one, the run's commit (on
        `effect.onto` when given), the logs' archive on `refs/runner/logs/<run>`, then the
        journal cleared.

        :returns: `Done` once all of it is; `CommitFailed(CommitPart.COMMIT, ...)` when git
            refused the commit after the files were written, `CommitFailed(CommitPart.ARCHIVE,
            ...)` when the commit was made but the archive was not, each with git's or the
            archive's one line: the journal stays, and 'runner recover' finishes the iteration.
            A disk failure while writing the files is `OSError` (`IoFailed`).

        Never raises for a failed commit: what the user is told and how the step ends is the
        machine's. Never chooses, adds to or reorders the files: `effect.files` is the record.
        """
        ...


class ScratchPort(Protocol):
    def list_scratch(self) -> ScratchListed | IoFailed:
        """List the scratch checkout the agent and the guard worked in, against the base commit:
        every path's kind, size and blob, for the core's import rules.

        :returns: `ScratchListed`, cut short past the import limits (then nothing is
            imported); `IoFailed` with git's one line when git cannot list it.

        Writes the changed files' blobs into the repository's objects and nothing else: never
        stages, commits or changes a file, for the machine decides what the commit takes.
        """
        ...


@attrs.frozen(slots=True)
class IterationPorts:
    """The shell's side of an iteration: its clock, processes and files, one port per concern
    (one object may implement several)."""

    clock: Clock
    agents: AgentRunner
    guards: GuardRunner
    records: IterationRecords
    reader: RepositoryReader
    committer: Committer
    scratch: ScratchPort | None = None  # None: the agent works in the run's own checkout
