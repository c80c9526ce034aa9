"""The ports that read and write an iteration's state: its records under `.runner/` and the
journal (`DiskRecords`), the repository as the agent left it (`CheckoutReader`), the commit and
what it takes (`GitCommitter`), and the listing of the scratch checkout.

Each carries out one effect as asked and answers git's failures, and a commit's, as the core's
results (`IoFailed`, `CommitFailed`); only the disk's `OSError` goes through, which the
interpreter answers as `IoFailed`. Never decides what to write or commit: the machine's effects
say, and the machine says what a failure means.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import attrs

from runner_core.changes.import_rules import ImportLimits
from runner_core.iteration.effects import (
    Carried,
    CarryWork,
    Commit,
    CommitFailed,
    CommitPart,
    ConfigRead,
    Done,
    ExecutionsCounted,
    HeadRead,
    IoFailed,
    PrepareIterationDir,
    ReadHead,
    ScratchListed,
    TreeRead,
    WriteContext,
    WriteIterationFile,
)
from runner_core.iteration.ports import ScratchPort
from runner_core.iteration.recovery import Journal
from runner_core.run.outside_change import GitHead
from runner_shell.errors import UserFacingError
from runner_shell.git.log_archive import ArchiveError
from runner_shell.git.merging import carry_onto
from runner_shell.git.repo import GitError, Repo
from runner_shell.scratch.listing import list_scratch
from runner_shell.step import protected_files
from runner_shell.step.iteration_commit import commit_iteration
from runner_shell.step.lock_and_journal import write_journal
from runner_shell.store.files import (
    append_bytes,
    atomic_write_bytes,
    atomic_write_text,
    make_directory,
    rename_within,
)
from runner_shell.store.iteration_log import count_executions
from runner_shell.store.layout import Places, RunnerPaths
from runner_shell.store.state_files import read_bytes, read_tree_bytes


@attrs.define
class KeptListing:
    """A job's scratch port that keeps the listing it gave: the base's entries in it spare the
    merge queue's thread reading them again."""

    inner: ScratchPort
    listed: ScratchListed | None = None

    def list_scratch(self) -> ScratchListed | IoFailed:
        listed = self.inner.list_scratch()
        if isinstance(listed, ScratchListed):
            self.listed = listed
        return listed


@attrs.frozen(slots=True)
class SlotLister:
    """Lists the scratch checkout against the base commit for the core's import rules."""

    repo: Repo
    slot: Path
    base: str
    limits: ImportLimits = attrs.field(
        factory=ImportLimits
    )  # past them the walk stops: nothing is imported

    def list_scratch(self) -> ScratchListed | IoFailed:
        try:
            return ScratchListed(list_scratch(self.repo, self.slot, self.base, self.limits))
        except GitError as error:
            return IoFailed(str(error))


@attrs.frozen(slots=True)
class DiskRecords:
    """The iteration's directory and files under `.runner/`, the context files (in the scratch
    checkout too), and the journal in the git directory."""

    paths: Places
    repo: Repo
    iter_dir: Path
    slot: Path | None = None  # the agent's scratch checkout: its context lives there too
    journal_file: Path | None = None  # a parallel job's journal while it runs, else the run's

    def prepare(self, effect: PrepareIterationDir) -> None:
        if effect.set_aside_as is not None:
            rename_within(self.iter_dir.parent, self.iter_dir.name, effect.set_aside_as)
        make_directory(self.iter_dir)

    def write_context(self, effect: WriteContext) -> None:
        context_dir = self.paths.context_dir
        slot_context = (
            ()
            if self.slot is None
            else (self.slot.absolute() / context_dir.relative_to(self.paths.root),)
        )
        for directory in (context_dir, *slot_context):
            if directory.is_symlink():  # runner-owned: an agent's symlink goes, unfollowed
                directory.unlink()
            make_directory(directory)
            for name, text in effect.files:
                # Written anew for every iteration: a crash loses nothing worth an fsync.
                atomic_write_text(directory / name, text, durable=False)
            for name in effect.remove:
                (directory / name).unlink(missing_ok=True)

    def write_journal(self, journal: Journal) -> None:
        write_journal(self.repo, journal, self.journal_file)

    def write_iteration_file(self, effect: WriteIterationFile) -> None:
        target = self.iter_dir / effect.name
        if effect.append:
            append_bytes(target, effect.text.encode("utf-8"))
        else:
            atomic_write_text(target, effect.text)


@attrs.frozen(slots=True)
class CheckoutReader:
    """tree.json, config.toml, HEAD and the run's records, as the agent and guard left them."""

    paths: Places
    repo: Repo
    run_id: str
    slot: Path | None = None  # the agent's scratch checkout: its tree.json is read there

    def read_tree(self) -> TreeRead:
        try:
            worked_in = self.paths if self.slot is None else RunnerPaths(self.slot)
            return TreeRead(read_tree_bytes(worked_in, fixes=self.slot is None))
        except UserFacingError as error:  # the agent deleted it, or grew it past the limit
            return TreeRead(b"", str(error))

    def read_config(self) -> ConfigRead:
        try:
            return ConfigRead(read_bytes(self.paths.config))
        except OSError:  # deleted or replaced by the agent
            return ConfigRead(None)

    def read_head(self, effect: ReadHead) -> HeadRead | IoFailed:
        try:
            return HeadRead(self.repo.branch_seen(effect.before))
        except GitError as error:
            return IoFailed(str(error))

    def count_executions(self) -> ExecutionsCounted:
        return ExecutionsCounted(count_executions(RunnerPaths(self.paths.root), self.run_id))


@attrs.frozen(slots=True)
class GitCommitter:
    """config.toml put back, the agent's work carried onto the operator's commits, and the
    iteration's final write-set and commit."""

    paths: Places
    repo: Repo
    run_id: str
    iter_dir: Path
    protected: protected_files.Snapshot = ()  # put back right before the commit
    base: GitHead | None = None  # with a scratch checkout: the commit the commit builds on
    # The parallel loop's state lock, held while the commit is written, and what to do then.
    hold: AbstractContextManager[object] | None = None
    on_committed: Callable[[], None] | None = None

    def restore_config(self, data: bytes) -> None:
        atomic_write_bytes(self.paths.config, data)

    def carry_work(self, effect: CarryWork) -> Carried | IoFailed:
        """The agent's changes carried onto the operator's commits, as a parallel job's are."""
        try:
            changes, conflicts = carry_onto(self.repo, effect.base, effect.onto, effect.changes)
        except GitError as error:
            return IoFailed(str(error))
        return Carried(changes, conflicts)

    def commit(self, effect: Commit) -> Done | CommitFailed:
        try:
            commit_iteration(
                self.paths,
                self.repo,
                self.run_id,
                self.iter_dir,
                effect,
                protected_files.ProtectedStaging(self.paths, self.protected, self.run_id),
                self.base if effect.onto is None else effect.onto,
                self.hold,
                self.on_committed,
            )
        except GitError as error:
            return CommitFailed(CommitPart.COMMIT, str(error))
        except ArchiveError as error:
            return CommitFailed(CommitPart.ARCHIVE, str(error))
        return Done()
