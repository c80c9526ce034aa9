"""A leaf job on a worker: its start commit fetched from the shared remote, its agent and guard
run in a sandboxed slot of the worker's own clone exactly as a local job's, its answer pushed.

The worker decides nothing of the run: the facts come from the coordinator, the machine is the
core's, and it stops where a local job stops (`job_merge.waits_to_merge`). What it leaves is a
commit on `refs/runner/jobs/<run>/<iter>/<attempt>` (job_files.py) and a result naming it; the
coordinator checks both before anything is merged (docs/temporal.md).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import attrs

from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.recovery import Journal
from runner_core.loop.events import Event
from runner_core.parallel.job_merge import waits_to_merge
from runner_shell.errors import UserFacingError
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import Repo
from runner_shell.remote import wire
from runner_shell.remote.errors import JobRefused
from runner_shell.remote.job_files import (
    EVENTS_FILE,
    JOB_ATTEMPT,
    JobRequest,
    JobResult,
    base_ref,
    result_ref,
)
from runner_shell.remote.live_events import window_json
from runner_shell.remote.worker_rules import WorkerRules, refused_command, worker_config
from runner_shell.scratch.slots import (
    SlotError,
    prepare_slot,
    slot_path,
    slot_sandbox,
    step_sandbox,
)
from runner_shell.step.iteration_store import KeptListing
from runner_shell.step.lock_and_journal import job_journal_path
from runner_shell.step.runner import JobPlace, drive, shell_ports
from runner_shell.store.layout import RunnerPaths

FETCH_TIMEOUT_SECS = 600.0
DEFAULT_RULES = WorkerRules()
_POOL_LOCK = threading.Lock()
_BUSY: set[Path] = set()


def run_job(
    work_dir: Path,
    repo_url: str,
    request_json: str,
    heartbeat: Callable[[str], None],
    rules: WorkerRules = DEFAULT_RULES,
    identity: str | None = None,
) -> str:
    """The job `request_json` asks for, run in one of `work_dir`'s clones of `repo_url` under
    this worker's own `rules` (worker_rules.py); its result as JSON, naming the worker by
    `identity`. JobRefused, before anything runs, for a request this worker will not take (an
    argv its rules do not allow, another repository)."""
    request = JobRequest.from_json(request_json)
    try:
        facts = wire.loads(request.facts, IterationFacts)
    except wire.WireError as error:  # the same request would fail the same way: never retried
        raise JobRefused(f"job {request.iteration}: {error}") from None
    if (facts.run_id, facts.plan.iteration) != (request.run_id, request.iteration):
        raise JobRefused(f"job {request.iteration}: its facts are another job's")
    refused = refused_command(facts.config, rules)
    if refused is not None:
        raise JobRefused(f"job {request.iteration}: {refused}")
    facts = attrs.evolve(facts, config=worker_config(facts.config, rules))
    started = time.monotonic()
    with _clone(work_dir, repo_url) as clone:
        repo = Repo(clone)
        _check_out_base(repo, repo_url, request)
        machine, entries = _drive(repo, request, facts, heartbeat)
        commit = _answer_commit(repo, request, machine)
        attempt = JOB_ATTEMPT.get()
        _push(repo, repo_url, commit, result_ref(request.run_id, request.iteration, attempt))
    result = JobResult(
        run_id=request.run_id,
        iteration=request.iteration,
        base=request.base,
        commit=commit,
        machine=wire.dumps(attrs.evolve(machine, journal=_without_groups(machine))),
        base_entries=entries,
        elapsed_secs=time.monotonic() - started,
        worker=identity or f"{socket.gethostname()}:{os.getpid()}",
        attempt=attempt,
    )
    return result.to_json()


@contextlib.contextmanager
def _clone(work_dir: Path, repo_url: str) -> Iterator[Path]:
    """A clone of the shared remote no other job of this worker is using, made when needed."""
    clones = work_dir.expanduser().resolve() / "clones"
    with _POOL_LOCK:
        number = 0
        while clones / str(number) in _BUSY:
            number += 1
        clone = clones / str(number)
        _BUSY.add(clone)
    try:
        if not (clone / ".git").is_dir():
            clone.mkdir(parents=True, exist_ok=True)
            _git(clone, "init", "--quiet", ".")
        yield clone
    finally:
        with _POOL_LOCK:
            _BUSY.discard(clone)


def _git(cwd: Path, *args: str, timeout: float = FETCH_TIMEOUT_SECS) -> str:
    found = run_git(args, cwd, timeout=timeout)
    if found.returncode != 0:
        said = found.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise GitError(f"git {args[0]}: {said[-1] if said else 'failed'}")
    return found.stdout.decode("utf-8", errors="replace")


def _check_out_base(repo: Repo, repo_url: str, request: JobRequest) -> None:
    """The clone's work tree at the job's start commit, nothing else in it, and the commit its
    checkout starts from fetched with it; JobRefused when the remote does not hold them under
    the job's names (another repository)."""
    _fetch_start(repo, repo_url, request, request.base, "start commit")
    if request.start is not None:
        _fetch_start(repo, repo_url, request, request.start, "checkout's start")
        parents = _git(repo.root, "rev-list", "--parents", "-n", "1", request.start).split()
        if parents[1:] != [request.base]:
            raise JobRefused(
                f"job {request.iteration}: its checkout's start {request.start[:12]} is not "
                f"its start commit {request.base[:12]} with files on it"
            )
    _git(repo.root, "checkout", "--quiet", "--force", "--detach", request.base)
    _git(repo.root, "clean", "--quiet", "-ffdx")


def _fetch_start(repo: Repo, repo_url: str, request: JobRequest, commit: str, what: str) -> None:
    """`commit` in the clone, by its base ref on `repo_url` (fetched unless an earlier job of
    this clone did); JobRefused when the remote names no such commit there."""
    ref = base_ref(request.run_id, commit)
    if run_git(("cat-file", "-e", f"{ref}^{{commit}}"), repo.root).returncode != 0:
        try:  # not fetched for an earlier job of this clone
            _git(repo.root, "fetch", "--quiet", "--no-tags", repo_url, f"+{ref}:{ref}")
        except GitError as error:
            raise JobRefused(
                f"job {request.iteration}: {repo_url} has no {what} for it ({error})"
            ) from None
    found = _git(repo.root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    if found != commit:
        raise JobRefused(
            f"job {request.iteration}: {repo_url} names {found[:12]} as its {what}, "
            f"not {commit[:12]}: another repository"
        )


def _drive(
    repo: Repo, request: JobRequest, facts: IterationFacts, heartbeat: Callable[[str], None]
) -> tuple[IterationMachine, tuple[tuple[str, str, str], ...] | None]:
    """The job's machine, from its start up to the merge, in slot 0 of this clone."""
    paths = RunnerPaths(repo.root)
    # The coordinator's monotonic clock is not this machine's: the job starts now, here.
    facts = attrs.evolve(facts, started=attrs.evolve(facts.started, monotonic=time.monotonic()))
    sandbox = slot_sandbox(step_sandbox(paths, repo, facts.config), 0)
    try:
        sandbox_config = facts.config.sandbox
        setup, inputs = sandbox_config.setup, sandbox_config.setup_inputs
        # A start other than the run's head holds an earlier attempt's files.
        moved = facts.head is not None and request.base != facts.head.sha
        attempt = request.start is not None or moved
        prepare_slot(repo, request.start or request.base, setup, 0, sandbox, inputs, attempt)
    except (SlotError, OSError) as error:
        raise UserFacingError(
            f"the agent's scratch checkout could not be prepared: {error}"
        ) from None
    events = CollectedEvents(heartbeat)
    place = JobPlace(0, job_journal_path(repo, request.iteration))
    place.journal_file.parent.mkdir(parents=True, exist_ok=True)
    slot = slot_path(repo, 0)
    ports = shell_ports(paths, repo, facts, events, slot, sandbox, place, request.start)
    assert ports.scratch is not None
    kept = KeptListing(ports.scratch)
    machine = drive(
        start_iteration(facts), attrs.evolve(ports, scratch=kept), events, waits_to_merge
    )
    _write_events(paths.iter_dir(facts.run_id, request.iteration), events.events)
    return machine, _base_entries(machine, kept)


def _base_entries(
    machine: IterationMachine, kept: KeptListing
) -> tuple[tuple[str, str, str], ...] | None:
    imported = machine.imported
    if imported is None or not imported.changes or kept.listed is None:
        return None
    base = kept.listed.listing.base
    paths = (change.path for change in imported.changes)
    # Every changed path, in order; one not at the base has no mode and no oid.
    return tuple(
        (path, base[path].mode, base[path].oid) if path in base else (path, "", "")
        for path in paths
    )


def _without_groups(machine: IterationMachine) -> Journal:
    """The journal the coordinator takes over: this machine's processes are not its to end."""
    return attrs.evolve(machine.journal, process_groups=())


@attrs.define
class CollectedEvents:
    """The job's events, kept to be sent along with its files; each time it emits some, the
    window of its latest events is the job's heartbeat, so the coordinator emits them live."""

    heartbeat: Callable[[str], None]
    events: list[Event] = attrs.field(factory=list)
    encoded: list[object] = attrs.field(factory=list)

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
        fresh = list(events)
        if not fresh:
            return
        self.events.extend(fresh)
        self.encoded.extend(wire.encode(event) for event in fresh)
        self.heartbeat(window_json(self.encoded))


def _write_events(iter_dir: Path, events: list[Event]) -> None:
    iter_dir.mkdir(parents=True, exist_ok=True)
    (iter_dir / EVENTS_FILE).write_text(wire.dumps(tuple(events)), encoding="utf-8")


def _answer_commit(repo: Repo, request: JobRequest, machine: IterationMachine) -> str:
    """The start commit with the agent's changes (their blobs), then the iteration's files."""
    from runner_shell.git.fast_commit import import_commit
    from runner_shell.git.repo import FALLBACK_EMAIL, FALLBACK_NAME

    identity = (FALLBACK_NAME, FALLBACK_EMAIL)
    changes = () if machine.imported is None else machine.imported.changes
    message = f"runner: job {request.iteration} of run {request.run_id}"
    files = import_commit(repo, request.base, changes, (), identity, message).commit
    iter_dir = RunnerPaths(repo.root).iter_dir(request.run_id, request.iteration)
    tree = _tree_of(repo, iter_dir)
    return _git(
        repo.root,
        "-c",
        f"user.name={FALLBACK_NAME}",
        "-c",
        f"user.email={FALLBACK_EMAIL}",
        "commit-tree",
        tree,
        "-p",
        files,
        "-m",
        f"runner: files of job {request.iteration}",
    ).strip()


def _tree_of(repo: Repo, directory: Path) -> str:
    """A tree of the regular files under `directory` (the runner's own: the agent's sandbox
    never reaches the iteration directory), written into the clone's objects."""
    lines = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            lines.append(f"040000 tree {_tree_of(repo, Path(entry.path))}\t{entry.name}")
        elif entry.is_file(follow_symlinks=False):
            oid = _git(repo.root, "hash-object", "-w", "--no-filters", "--", entry.path).strip()
            lines.append(f"100644 blob {oid}\t{entry.name}")
    found = run_git(("mktree",), repo.root, stdin="".join(f"{x}\n" for x in lines).encode())
    if found.returncode != 0:
        raise GitError("git mktree: " + found.stderr.decode("utf-8", errors="replace").strip())
    return found.stdout.decode("ascii").strip()


def _push(repo: Repo, repo_url: str, commit: str, ref: str) -> None:
    """The answer on its attempt's own ref; never forced: a ref there is never replaced."""
    _git(repo.root, "push", "--quiet", repo_url, f"{commit}:{ref}")
