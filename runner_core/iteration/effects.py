"""What an iteration asks the shell to do and what the shell reports back, as data: every
effect (`Effect`), every result (`Result`) and which results may answer which effect (`ANSWERS`).

Never performs an effect nor interprets a result: the shell's interpreter carries each out
through a port, and the machine reads each answer, one stage at a time.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from runner_core.backends.limits import LimitSignal
from runner_core.changes.import_rules import Change, ScratchListing
from runner_core.guard.report import TestReport
from runner_core.history.records import ExecutionRecord, TokenUsage
from runner_core.iteration.guard_stage import GuardRun
from runner_core.iteration.plan import IterationOutcome
from runner_core.iteration.recovery import Journal
from runner_core.run.outside_change import BranchSeen, GitHead
from runner_core.run.sandbox_config import LimitHit
from runner_core.tree.model import AgentRole, Node


@attrs.frozen(slots=True)
class ReadHead:
    """Say which branch the run's checkout has and which commit HEAD is, after the agent and
    guard, and where `before`'s branch is now: when it moved, whether from `before`'s commit
    forward, and which paths the commits between changed."""

    before: GitHead


@attrs.frozen(slots=True)
class CarryWork:
    """The operator's commits moved the run branch from `base` to `onto` meanwhile: the
    agent's `changes` (made from `base`) carried onto `onto` as a parallel job's are, a file
    both changed merged line by line; the changes to commit and the paths that conflict."""

    base: str
    onto: str
    changes: tuple[Change, ...]


@attrs.frozen(slots=True)
class PrepareIterationDir:
    """Create the iteration directory, first renaming a left-over one to `set_aside_as`."""

    set_aside_as: str | None


@attrs.frozen(slots=True)
class WriteContext:
    """Write these `.runner/context/` files and remove the others of CONTEXT_FILES."""

    files: tuple[tuple[str, str], ...]
    remove: tuple[str, ...]


@attrs.frozen(slots=True)
class WriteJournal:
    journal: Journal


@attrs.frozen(slots=True)
class WriteIterationFile:
    """Write (or append to) a file of the iteration directory."""

    name: str
    text: str
    append: bool = False


@attrs.frozen(slots=True)
class RunAgent:
    """Run the role's agent on `prompt_name` until `timeout_secs`; `env` joins RUNNER_* paths."""

    role: AgentRole
    env: tuple[tuple[str, str], ...]
    timeout_secs: float
    limit_bytes: int
    prompt_name: str
    output_name: str
    usage_name: str
    log_name: str


@attrs.frozen(slots=True)
class ReadTree:
    """Read tree.json as the agent left it."""


@attrs.frozen(slots=True)
class RunGuard:
    """Run the guard in the agent's checkout; `report_name` (in the iteration directory) is
    where it may write its JUnit XML report, read back into the result. A BASELINE run is at
    the base commit, before the agent: the checkout is reset to the base after it. With
    `setup_inputs` (the files of `[sandbox] setup_inputs` the agent's imported changes touch),
    setup runs again in the checkout first, so the guard judges the fresh output of setup."""

    argv: tuple[str, ...]
    timeout_secs: float
    limit_bytes: int
    log_name: str
    env: tuple[tuple[str, str], ...] = ()
    report_name: str | None = None
    purpose: GuardRun = GuardRun.JUDGE
    setup_inputs: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class ReadConfig:
    """Read config.toml's bytes, to see whether the agent changed it."""


@attrs.frozen(slots=True)
class RestoreConfig:
    """config.toml belongs to the user and the runner, never to the agent: put it back."""

    data: bytes


@attrs.frozen(slots=True)
class CountExecutions:
    """Count each node's recorded iterations of the run (only for a run state without counts)."""


class Place(enum.StrEnum):
    STATE = "state"  # .runner/state/
    ITERATION = "iteration"  # .runner/iterations/<run>/<iter>/
    RUN = "run"  # .runner/iterations/<run>/


@attrs.frozen(slots=True)
class FileWrite:
    """One file of the final write-set, written atomically.

    `link_from` (a name under Place.RUN) asks for a hard link to that snapshot instead, made
    only while its bytes have the SHA-256 `link_sha256` (an agent may have rewritten or replaced
    it); otherwise `data` is written, or the canonical text of `fallback_tree`. `read_only` files
    are snapshots (mode 0444); `rename_from` moves a file of the iteration directory into place
    if it exists.
    """

    place: Place
    name: str
    data: bytes | str = b""  # text is written as UTF-8
    read_only: bool = False
    link_from: str | None = None
    rename_from: str | None = None
    fallback_tree: Node | None = None
    link_sha256: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.link_from is None) != (self.link_sha256 is None):
            raise ValueError("a link names its source and the SHA-256 its bytes must have")


@attrs.frozen(slots=True)
class AttemptCommit:
    """The files of an iteration not judged a pass, as a commit of their own: `changes` on top
    of `base` (the commit the agent's checkout started from), kept on `ref`."""

    ref: str
    base: str
    changes: tuple[Change, ...]
    message: str


@attrs.frozen(slots=True)
class Commit:
    """The iteration's end: journal `writing`, the files in order, journal `committing`, the
    commit, then the journal cleared."""

    writing: Journal
    files: tuple[FileWrite, ...]
    committing: Journal
    message: str
    changes: tuple[Change, ...] = ()  # what the commit takes of the scratch checkout
    # The branch and commit it builds on when the operator's commits moved the branch from
    # the one the iteration started at; None: that one.
    onto: GitHead | None = None
    # The files of an iteration not judged a pass, committed on a ref of their own first.
    attempt: AttemptCommit | None = None


@attrs.frozen(slots=True)
class Finished:
    """The iteration is committed; nothing more to do. `tests` is the guard's report when it
    describes the committed files (a baseline for the next iteration), else None."""

    outcome: IterationOutcome
    record: ExecutionRecord
    limit: LimitSignal | None = None  # the usage or rate limit the agent hit
    tests: TestReport | None = None
    notice: str | None = None  # the one line telling the operator their change was kept


@attrs.frozen(slots=True)
class Abort:
    """An I/O failure before the iteration exists: nothing recorded, the error propagates."""

    message: str


# What the shell carries out; the machine answers each with its next effect.
@attrs.frozen(slots=True)
class ListScratch:
    """List the scratch checkout the agent and guard worked in, against the base commit."""


Action = (
    PrepareIterationDir
    | WriteContext
    | WriteJournal
    | WriteIterationFile
    | RunAgent
    | ReadTree
    | RunGuard
    | ReadConfig
    | RestoreConfig
    | ReadHead
    | CarryWork
    | CountExecutions
    | ListScratch
    | Commit
)

# The iteration's end: committed, or aborted before it existed.
End = Finished | Abort

Effect = Action | End


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
    sandbox_limit: LimitHit | None = None  # the `[sandbox]` limit that ended the session


@attrs.frozen(slots=True)
class GuardFinished:
    exit_code: int | None
    timed_out: bool
    process_group: int | None = None
    interrupted: str | None = None  # the signal that stopped the guard, when one did
    report: TestReport | None = None  # the report it wrote, when it wrote a readable one
    report_problem: str | None = None  # why the report it wrote could not be read
    sandbox_limit: LimitHit | None = None  # the `[sandbox]` limit that ended the guard
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


class CommitPart(enum.StrEnum):
    """The part of an iteration's end that did not happen, its files already written."""

    COMMIT = "commit"  # git refused the commit: the iteration is logged, not committed
    ARCHIVE = "archive"  # committed, but its logs are not on refs/runner/logs/<run>


@attrs.frozen(slots=True)
class CommitFailed:
    """The commit's `failed` part did not happen; `message` is git's or the archive's one line.
    The journal stays, so 'runner recover' finishes the iteration."""

    failed: CommitPart
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
    | CommitFailed
)


# Any effect may fail on I/O; a process may also fail to start, and a commit after its files.
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
        Commit: (Done, CommitFailed, IoFailed),
    }
)
