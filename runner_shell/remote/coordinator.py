"""The loop's side of a remote job: its start commit pushed, its request sent through an
executor, its answer checked and taken in as if the job had run in a local slot.

An answer is taken only when it is this job's (run, iteration, start commit), its commit is
the one the worker names, that commit's parent is the start commit with exactly the changes the
machine lists, and the iteration's files in it are plain files under plain names; anything
else is refused (JobLost): nothing of it is merged, and the loop runs the job's iteration as a
runner error (docs/temporal.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Protocol, TypeVar

import attrs

from runner_core.changes.import_rules import Change
from runner_core.changes.import_rules import shown as one_line
from runner_core.iteration.effects import AgentFinished, NotStarted, RunAgent
from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.machine import IterationMachine
from runner_core.iteration.recovery import Journal
from runner_core.loop.events import Event
from runner_core.parallel.job_merge import Entry, waits_to_merge
from runner_core.run.executor_config import ExecutorConfig
from runner_shell.errors import UserFacingError
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import Repo
from runner_shell.remote import wire
from runner_shell.remote.answer_rules import refused_import
from runner_shell.remote.errors import (
    JobFailed,
    JobRefused,
    RemoteUnavailable,
    TemporalRefused,
    TemporalUnavailable,
)
from runner_shell.remote.job_files import (
    EVENTS_FILE,
    JobRequest,
    JobResult,
    base_ref,
    job_id,
    result_ref,
)
from runner_shell.remote.keys import (
    CONFIG_TLS_NAMES,
    MAKE_ONE,
    JobKey,
    TLSFiles,
    read_key_file,
    read_tls_files,
)
from runner_shell.remote.live_events import JobProgress, fresh_events, read_window
from runner_shell.signals import raise_if_interrupted
from runner_shell.step.lock_and_journal import job_worker_path
from runner_shell.store.files import atomic_write_bytes, atomic_write_text


class Executor(Protocol):
    """Where a job's request goes and its answer comes from (the Temporal executor)."""

    def submit(self, job_id: str, request_json: str) -> None: ...

    def result(self, job_id: str, timeout_secs: float) -> str: ...

    def workers(self) -> tuple[object, ...]: ...

    def progress(self, job_id: str) -> JobProgress | None: ...

    def cancel(self, job_id: str) -> bool: ...

    def close(self) -> None: ...


CONFIG_FILE = ".runner/state/config.toml"
# How long the loop waits for the Temporal server at its start, and for each call.
CONNECT_SECS = 15.0
# The reasons of the `waiting` events a remote job's wait makes the loop say: no worker polls
# its queue; the Temporal server does not answer.
NO_WORKERS = "no_workers"
UNREACHABLE = "temporal_unavailable"
REMOTE_UNREACHABLE = "remote_unavailable"
# How often a job's thread looks up from its wait: a signal, no worker left on the queue.
POLL_SECS = 2.0
# How long a job may wait on a queue no worker polls before the loop says so again.
NO_WORKERS_SECS = 10
# `git ls-remote --exit-code`'s status when the remote answered and holds no such ref.
LS_REMOTE_NONE = 2
T = TypeVar("T")


@attrs.frozen(slots=True)
class Taken:
    """A remote job's machine at the merge, and its changed paths' entries at its base."""

    machine: IterationMachine
    base_entries: tuple[tuple[str, ...], dict[str, Entry]] | None


@attrs.frozen
class RemoteJobs:
    """Where a loop's jobs run: an executor, and the git remote it and the workers share."""

    executor: Executor
    repo_url: str
    heartbeat_secs: float = 30.0
    # The start commits already pushed for the workers: the jobs of a round share one.
    pushed: set[str] = attrs.field(factory=set, eq=False)
    pushing: threading.Lock = attrs.field(factory=threading.Lock, eq=False)


def request_for(
    remote: RemoteJobs, repo: Repo, facts: IterationFacts, start: str | None = None
) -> JobRequest:
    """Job `facts`'s request, its start commit pushed where the workers fetch it, and so is
    `start`, the commit its checkout starts from when that is not the start commit (the
    node's previous attempt's files carried onto it, as facts.resumed tells its prompt)."""
    run_id, iteration = facts.run_id, facts.plan.iteration
    assert facts.job_base is not None
    base = facts.job_base
    start = None if start == base else start
    for commit in (base,) if start is None else (base, start):
        _push_start(remote, repo, run_id, commit)
    deadline = facts.config.iteration_timeout_secs + 600.0
    facts_json = wire.dumps(facts)
    return JobRequest(
        run_id, iteration, base, facts_json, deadline, remote.heartbeat_secs, start=start
    )


def _push_start(remote: RemoteJobs, repo: Repo, run_id: str, commit: str) -> None:
    """`commit` on its base ref of the shared remote, once for every job it serves."""
    with remote.pushing:
        if commit in remote.pushed:
            return
        ref = base_ref(run_id, commit)
        try:
            _git(repo, "push", "--quiet", "--force", remote.repo_url, f"{commit}:{ref}")
        except GitError as error:
            raise RemoteUnavailable(remote.repo_url, _last_line(error)) from None
        remote.pushed.add(commit)


def answer_of(
    remote: RemoteJobs,
    repo: Repo,
    request: JobRequest,
    emit: EventsSink,
    waiting: Callable[[str, int], None],
) -> Taken:
    """Job `request`'s answer from its worker (submitted, or attached to when it already
    runs), checked and taken in; JobLost when it will not come or is not the job's."""
    name = job_id(request.run_id, request.iteration, request.base)
    live = LiveJob(job_worker_path(repo, request.iteration), emit)
    try:
        answer = _wait_for(remote, name, request, waiting, live)
        result = JobResult.from_json(answer)
        return until_reached(
            lambda: take(repo, remote.repo_url, request, result, emit, live.emitted), waiting
        )
    except (JobFailed, JobRefused) as error:
        raise JobLost(f"{error}") from None


def cancel_job(executor: Executor, name: str) -> str | None:
    """Job `name`'s workflow cancelled, so that its worker stops the job at its next heartbeat
    instead of running it for no one: what to say of it, None when it was not running (it
    finished: an answer it has is there to take)."""
    try:
        running = executor.cancel(name)
    except (TemporalUnavailable, TemporalRefused) as error:
        return f"job {name} not cancelled: {error}"
    return f"job {name} cancelled: its worker stops it" if running else None


def until_reached(call: Callable[[], T], waiting: Callable[[str, int], None]) -> T:
    """`call`'s value, called again every POLL_SECS while the git remote does not answer
    (said at once, then every NO_WORKERS_SECS); a signal meanwhile raises Interrupted."""
    say_at = 0.0
    while True:
        raise_if_interrupted()
        try:
            return call()
        except RemoteUnavailable:
            if time.monotonic() >= say_at:
                say_at = time.monotonic() + NO_WORKERS_SECS
                waiting(REMOTE_UNREACHABLE, NO_WORKERS_SECS)
            time.sleep(POLL_SECS)


@attrs.define
class LiveJob:
    """What the loop has shown of a remote job while it runs: the worker running it (kept in
    `worker_file` for the views) and how many of its events it has emitted."""

    worker_file: Path
    emit: EventsSink
    worker: str | None = None
    emitted: int = 0

    def look(self, executor: Executor, name: str) -> bool:
        """Job `name`'s worker written when it is new, its events not yet emitted emitted;
        whether the server answered (one that does not is the wait's to say)."""
        try:
            found = executor.progress(name)
        except TemporalUnavailable:
            return False
        except TemporalRefused:
            return True
        if found is None:
            return True
        if found.worker is not None and found.worker != self.worker:
            atomic_write_text(self.worker_file, f"{found.worker}\n")
            self.worker = found.worker
        window = read_window(found.details)
        if window is None:
            return True
        encoded, emitted = fresh_events(window, self.emitted)
        try:
            events = [wire.decode(item) for item in encoded]
        except wire.WireError:
            return True  # not events: the answer, checked, brings the job's own
        fresh = [event for event in events if isinstance(event, Event)]
        if fresh:
            self.emit.emit(fresh)
        self.emitted = emitted
        return True


def _wait_for(
    remote: RemoteJobs,
    name: str,
    request: JobRequest,
    waiting: Callable[[str, int], None],
    live: LiveJob,
) -> str:
    """Job `name`'s answer, the job submitted first; at each look `live` shows what the job
    did meanwhile. A signal heard meanwhile raises Interrupted in this job's thread; `waiting`
    hears, each time NO_WORKERS_SECS pass, that no worker polls the queue or that the server
    does not answer (the wait goes on)."""
    give_up = time.monotonic() + request.deadline_secs
    look_again = time.monotonic() + NO_WORKERS_SECS
    submitted = False
    reached = True
    while True:
        raise_if_interrupted()
        left = give_up - time.monotonic()
        if left <= 0:
            raise JobFailed(name, f"no answer in {request.deadline_secs:g} s")
        try:
            if not submitted:
                remote.executor.submit(name, request.to_json())
                submitted = True
            return remote.executor.result(name, min(POLL_SECS, left))
        except TimeoutError:
            reason = NO_WORKERS if live.look(remote.executor, name) else UNREACHABLE
        except TemporalUnavailable:
            reason = UNREACHABLE
            time.sleep(min(POLL_SECS, left))
        # The server lost is said at once, then every NO_WORKERS_SECS while it stays away.
        lost_now = reason == UNREACHABLE and reached
        reached = reason != UNREACHABLE
        if lost_now or time.monotonic() >= look_again:
            look_again = time.monotonic() + NO_WORKERS_SECS
            missing = reason if reason == UNREACHABLE else _missing(remote)
            if missing is not None:
                waiting(missing, NO_WORKERS_SECS)


def _missing(remote: RemoteJobs) -> str | None:
    """Why a job waits on, when its queue's side says why: no worker polls it, or the server
    does not answer (a wait for an answer gives up with a timeout either way)."""
    try:
        return None if remote.executor.workers() else NO_WORKERS
    except TemporalUnavailable:
        return UNREACHABLE


class JobLost(Exception):
    """A remote job that will not answer (failed, refused, or answered for another job): the
    loop runs its iteration as a runner error, nothing of it merged."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


@attrs.frozen
class Unanswered:
    """The agent port of a remote job the loop did not take an answer from: its agent did not
    run here (a runner error, no attempt used), or a signal stopped the wait (interrupted)."""

    line: str | None = None
    signal: str | None = None

    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted:
        del effect, journal
        if self.signal is not None:
            return AgentFinished(None, False, None, None, interrupted=self.signal)
        return NotStarted(f"its worker did not answer: {self.line}")


class EventsSink(Protocol):
    def emit(self, events: list[Event], *, fsync: bool = False) -> None: ...


def take(
    repo: Repo,
    repo_url: str,
    request: JobRequest,
    result: JobResult,
    emit: EventsSink,
    shown: int = 0,
) -> Taken:
    """`result`, checked against `request`, as the job's machine; its files in place, its
    events after the first `shown` (emitted while it ran) emitted."""
    line = f"job {request.iteration}"
    worker = one_line(result.worker)  # its --identity, on one line whatever it says
    if (result.run_id, result.iteration, result.base) != (
        request.run_id,
        request.iteration,
        request.base,
    ):
        raise JobRefused(f"{line}: the worker {worker} answered for another job")
    ref = result_ref(request.run_id, request.iteration, result.attempt)
    try:
        _git(repo, "fetch", "--quiet", "--no-tags", repo_url, f"+{ref}:{ref}")
    except GitError as error:
        listed = run_git(("ls-remote", "--exit-code", repo_url, ref), repo.root, timeout=60)
        if listed.returncode != LS_REMOTE_NONE:  # not a missing ref: the remote not reached
            raise RemoteUnavailable(repo_url, _last_line(error)) from None
        raise JobRefused(f"{line}: its answer is not on {repo_url}: {error}") from None
    if _git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}").strip() != result.commit:
        raise JobRefused(f"{line}: {ref} is not the commit the worker {worker} named")
    machine = _answered(line, worker, result.machine, IterationMachine)
    _check_machine(line, request, machine)
    files = _parents(repo, result.commit, line)
    if _parents(repo, files, line) != request.base:
        raise JobRefused(f"{line}: its answer does not start at its start commit")
    changes = () if machine.imported is None else machine.imported.changes
    held = _changes(repo, request.base, files)
    if held != {c.path: c for c in changes}:
        raise JobRefused(f"{line}: its commit does not hold the changes its machine lists")
    own = wire.loads(request.facts, IterationFacts)
    refused = refused_import(repo, request.base, files, held, own)
    if refused is not None:
        raise JobRefused(f"{line}: the answer of worker {worker} is refused: {refused}")
    named = _answer_files(repo, result.commit, line)
    found = _blob(repo, named.pop(EVENTS_FILE, None))  # before any file is written
    try:
        text = None if found is None else found.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None:
        raise JobRefused(f"{line}: the answer of worker {worker} has no readable events")
    events = _answered(line, worker, text, tuple)
    _write_files(repo, named, _iter_dir(repo, request), line)
    emit.emit([event for event in events[shown:] if isinstance(event, Event)])
    # The job's facts are this loop's own, not what the worker says they were: the config its
    # merge, second guard run and commit go by is the coordinator's.
    started = attrs.evolve(own.started, monotonic=time.monotonic() - result.elapsed_secs)
    machine = attrs.evolve(machine, facts=attrs.evolve(own, started=started))
    if machine.imported is not None:  # a refused import's files never left the worker
        machine = attrs.evolve(machine, imported=attrs.evolve(machine.imported, set_aside=()))
    return Taken(machine, _entries(result.base_entries))


def _answered(line: str, worker: str, text: str, expected: type[T]) -> T:
    """What a worker's answer encodes (`text`), which must be an `expected`."""
    try:
        found: T = wire.loads(text, expected)
    except wire.WireError as error:
        raise JobRefused(f"{line}: the answer of worker {worker} is refused: {error}") from None
    return found


def _check_machine(line: str, request: JobRequest, machine: IterationMachine) -> None:
    facts = machine.facts
    own = (facts.run_id, facts.plan.iteration, facts.job_base)
    if own != (request.run_id, request.iteration, request.base) or not waits_to_merge(machine):
        raise JobRefused(f"{line}: the machine in its answer is not this job's at its merge")
    if machine.journal.process_groups:
        raise JobRefused(f"{line}: its answer names processes of another machine")


def _last_line(error: Exception) -> str:
    said = str(error).strip().splitlines()
    return said[-1] if said else type(error).__name__


def _git(repo: Repo, *args: str) -> str:
    return repo.git(*args).stdout


def _parents(repo: Repo, commit: str, line: str) -> str:
    found = _git(repo, "rev-list", "--parents", "-n", "1", commit).split()
    if len(found) != 2:
        raise JobRefused(f"{line}: its answer's commits are not the shape a worker makes")
    return found[1]


def _changes(repo: Repo, base: str, files: str) -> dict[str, Change]:
    """What `files` changed from `base`, as the import rules list changes."""
    said = _git(repo, "diff-tree", "-r", "-z", "--no-renames", base, files)
    parts = said.split("\0")
    found: dict[str, Change] = {}
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        _, new_mode, _, new_oid, status = meta[1:].split(" ")
        if status == "D":
            found[path] = Change(path, None, None)
        else:
            found[path] = Change(path, new_mode, new_oid)
    return found


def _iter_dir(repo: Repo, request: JobRequest) -> Path:
    from runner_shell.store.layout import RunnerPaths

    return RunnerPaths(repo.root).iter_dir(request.run_id, request.iteration)


def _answer_files(repo: Repo, commit: str, line: str) -> dict[str, str]:
    """The iteration's files in the answer's commit, by name, each a plain file (its blob's id)
    under a plain name; JobRefused for any other entry, before anything is read."""
    files: dict[str, str] = {}
    for item in filter(None, _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split("\0")):
        meta, _, name = item.partition("\t")
        mode, kind, oid = meta.split(" ")
        parts = PurePosixPath(name).parts
        plain = all(part not in ("", ".", "..") for part in parts) and not name.startswith("/")
        if mode != "100644" or kind != "blob" or not plain:
            raise JobRefused(f"{line}: its answer holds {name!r}, not a plain file")
        files[name] = oid
    return files


def _blob(repo: Repo, oid: str | None) -> bytes | None:
    if oid is None:
        return None
    blob = run_git(("cat-file", "blob", oid), repo.root, filters=repo.filters())
    return blob.stdout if blob.returncode == 0 else None


def _write_files(repo: Repo, files: dict[str, str], iter_dir: Path, line: str) -> None:
    for name, oid in files.items():
        target = iter_dir.joinpath(*PurePosixPath(name).parts)
        data = _blob(repo, oid)
        if data is None:
            raise JobRefused(f"{line}: its answer's {name!r} cannot be read")
        try:  # a name too long here, or a file where the answer puts a directory
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, data)
        except OSError as error:
            raise JobRefused(f"{line}: its answer's {name!r} cannot be written: {error}") from None


def _entries(
    found: tuple[tuple[str, str, str], ...] | None,
) -> tuple[tuple[str, ...], dict[str, Entry]] | None:
    if found is None:
        return None
    paths = tuple(path for path, _, _ in found)
    return paths, {path: (mode, oid) for path, mode, oid in found if mode}


def remote_jobs(config: ExecutorConfig) -> RemoteJobs | None:
    """Where `[executor]` says jobs run: None for this machine's slots, else a connection to
    the Temporal server (the extra required, the server reached, in one line each if not)."""
    if config.kind != "temporal":
        return None
    from runner_shell.remote import require_temporal

    require_temporal()
    from runner_shell.remote.temporal import TemporalExecutor

    key, tls = sealing_of(config)
    executor = TemporalExecutor.connect(
        config.address, config.namespace, config.task_queue, CONNECT_SECS, key, tls
    )
    return RemoteJobs(executor, config.remote, float(config.heartbeat_secs))


def sealing_of(config: ExecutorConfig) -> tuple[JobKey, TLSFiles | None]:
    """`[executor]`'s key (required) and TLS files, read; one line naming the key if not."""
    what = f"{CONFIG_FILE}: executor."
    if not config.key_file:
        raise UserFacingError(f"{what}key_file: kind 'temporal' needs a key file; {MAKE_ONE}")
    key = read_key_file(Path(config.key_file), f"{what}key_file")
    if not config.uses_tls:
        return key, None
    return key, read_tls_files(config.tls_ca, config.tls_cert, config.tls_key, CONFIG_TLS_NAMES)
