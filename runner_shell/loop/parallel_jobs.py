"""A parallel job, and its merge onto the run branch when its turn comes.

A `Job` is what the loop knows of a scheduled iteration: its slot, the commit it started at,
its events' shared log, and what its thread left. `merge_job` carries out what
runner_core.parallel.job_merge decides for it: the head's side read, the job's facts moved onto
it, its files merged (`git merge-file` for a file both sides changed), its guard run again in
the merge queue's own slot when other work merged since it started, then the commit as any
iteration's (docs/parallel.md). It never decides which job merges when: the loop does.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.guard.report import TestReport
from runner_core.iteration.effects import Commit, GuardFinished
from runner_core.iteration.facts import Failure, IterationFacts
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.ports import AgentRunner
from runner_core.iteration.record import Resumed, is_runner_path
from runner_core.loop.budget import InFlight
from runner_core.loop.events import Event
from runner_core.parallel.job_changes import JobChanges
from runner_core.parallel.job_merge import (
    Entry,
    HeadSide,
    broke_after_merge,
    conflict_line,
    merge_guard,
    merge_guard_passed,
    merge_rerun,
    onto_head,
    refused,
    waits_to_merge,
)
from runner_core.parallel.merge_session import SessionEnd, session_line, with_spent
from runner_core.parallel.queue import needs_guard_again
from runner_core.run.outside_change import GitHead
from runner_shell.errors import UserFacingError
from runner_shell.git.merging import carry_onto, merged_commit
from runner_shell.git.repo import Repo
from runner_shell.guard.baselines import keep_baseline, known_baseline
from runner_shell.loop.merge_sessions import session_place, try_session
from runner_shell.loop.night_loop import LoopRun
from runner_shell.loop.run_branch import BranchWatch
from runner_shell.scratch.sandbox import Sandbox
from runner_shell.scratch.slots import SlotError, prepare_slot, slot_sandbox
from runner_shell.step.agent_and_guard import ProcessGuardRunner
from runner_shell.step.event_sink import IterationEvents
from runner_shell.step.iteration_store import GitCommitter, KeptListing
from runner_shell.step.lock_and_journal import (
    job_journal_path,
    job_place_path,
    write_job_changes,
)
from runner_shell.step.runner import JobPlace, StepRan, drive, interpret, shell_ports
from runner_shell.store.files import atomic_write_text, sha256_of_regular
from runner_shell.store.state_files import load_run_state, load_tree_and_sha256, read_bytes


class JobEvents:
    """One run's event log shared by every job's thread: a job's events are appended whole."""

    def __init__(self, events: IterationEvents, lock: threading.Lock) -> None:
        self.events, self.lock = events, lock

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
        with self.lock:
            self.events.emit(events, fsync=fsync)


REJUDGED_FAIL = (
    "its worker said the guard passed, but it fails when run here on the answer "
    "([executor] rejudge); the leaf runs again"
)


@attrs.define
class Job:
    """A scheduled iteration: where it runs, and what its thread left when it ended."""

    iteration: int
    path: str
    slot: int
    base: GitHead
    events: JobEvents
    sandbox: Sandbox | None
    slot_dir: Path
    merged_before: int  # the last iteration merged when it started
    started: float = attrs.field(factory=time.monotonic)
    ended: float | None = None  # when its thread ended: its time stops counting then
    machine: IterationMachine | None = None
    error: BaseException | None = None
    # Its changed paths' entries at its base, read in its thread: (the paths, what was found).
    base_entries: tuple[tuple[str, ...], dict[str, Entry]] | None = None
    # A remote job under `[executor] rejudge`: its pass counts only once its guard passes here.
    rejudge: bool = False
    backend: str | None = None  # the backend its agent runs (a fallback's, when one was chosen)
    # Its node's previous attempt's files on `base`, when its checkout starts from them.
    start: str | None = None
    resumed: Resumed | None = None


def keep_base_entries(job: Job, kept: KeptListing) -> None:
    """What the job's changed paths were at its base, as its listing read them, once its
    machine stops at the merge: the merge queue, one job at a time, then reads only the head's
    side."""
    imported = None if job.machine is None else job.machine.imported
    if imported is None or not imported.changes or kept.listed is None:
        return
    base = kept.listed.listing.base
    paths = tuple(change.path for change in imported.changes)
    found: dict[str, Entry] = {
        path: (base[path].mode, base[path].oid) for path in paths if path in base
    }
    job.base_entries = (paths, found)


def in_flight(job: Job) -> InFlight:
    """What a job not yet committed has spent: its time so far, its agent's figures once in."""
    secs = (job.ended or time.monotonic()) - job.started
    if job.machine is None:
        return InFlight(secs)
    return InFlight(secs, True, job.machine.tokens, job.machine.cost_usd)


def head_side(run: LoopRun) -> HeadSide:
    """The run branch as the job whose turn it is finds it."""
    paths, repo = run.paths, run.repo
    state = load_run_state(paths)
    tree, tree_sha256 = load_tree_and_sha256(paths)
    previous = None
    if state.run_id is not None:
        snapshot = paths.iter_dir(state.run_id, state.next_iter - 1) / "tree.after.json"
        found = sha256_of_regular(snapshot)
        previous = found if found is not None and found == tree_sha256 else None
    return HeadSide(repo.head(), tree, tree_sha256, state, read_bytes(paths.config), previous)


def merge_job(
    run: LoopRun,
    slots: int,
    job: Job,
    machine: IterationMachine,
    state_lock: threading.Lock,
    watch: BranchWatch | None = None,
) -> tuple[StepRan, bool]:
    """Job `job`'s merge onto the head and its commit (`slots`: the jobs' slots, the merge
    queue's is the next); whether it is a merge's rerun. What it writes (the state files, the
    commit, the head's baseline) it writes holding `state_lock`, which scheduling holds too;
    the log archive after it is written without. `watch` refuses a head the loop did not make
    unless it is the operator's commits, which it takes."""
    notice = None
    if watch is not None:
        with state_lock:
            _, notice = watch.check(job.iteration)
    side = head_side(run)
    machine = onto_head(machine, side)
    if needs_guard_again(job.base.sha, side.head.sha) or job.rejudge:
        machine = _merged_onto(run, slots, job, machine, side)
    ports = shell_ports(run.paths, run.repo, machine.facts, job.events, job.slot_dir, job.sandbox)
    machine = drive(machine, ports, job.events, until=_committing)
    tests = None if machine.finished is None else machine.finished.tests
    assert isinstance(ports.committer, GitCommitter)
    committer = attrs.evolve(
        ports.committer, hold=state_lock, on_committed=lambda: _committed(run.repo, tests, watch)
    )
    finished = interpret(machine, attrs.evolve(ports, committer=committer), job.events)
    facts = machine.facts
    result = StepRan(
        facts.run_id,
        facts.plan,
        finished.outcome,
        finished.limit,
        finished.record.tests,
        notice or finished.notice,
    )
    return result, merge_rerun(machine)


def _committing(machine: IterationMachine) -> bool:
    return isinstance(machine.effect, Commit)


def _committed(repo: Repo, tests: TestReport | None, watch: BranchWatch | None) -> None:
    _keep_baseline(repo, tests)
    if watch is not None:
        watch.made()


def _keep_baseline(repo: Repo, tests: TestReport | None) -> None:
    """The report of the guard that judged the files just committed: the new head's baseline."""
    if tests is not None:
        keep_baseline(repo, repo.head_sha(), tests)


def _merged_onto(
    run: LoopRun, slots: int, job: Job, machine: IterationMachine, side: HeadSide
) -> IterationMachine:
    """The job's files merged onto the head's, and its pass checked again on the result."""
    repo = run.repo
    imported = machine.imported or ImportDecision()
    if merge_rerun(machine) or not imported.changes:
        return _guarded_again(run, slots, job, machine, side)
    if merge_guard(machine) is None:  # not a pass: its files stay on its attempt's ref
        return _notes_onto(run, job, machine, side)
    paths = tuple(change.path for change in imported.changes)
    known = job.base_entries[1] if job.base_entries and job.base_entries[0] == paths else None
    changes, conflicts = carry_onto(repo, job.base.sha, side.head.sha, imported.changes, known)
    if conflicts:
        return _through_session(run, slots, job, machine, side, (changes, conflicts))
    machine = attrs.evolve(machine, imported=attrs.evolve(imported, changes=changes))
    return _guarded_again(run, slots, job, machine, side)


def _through_session(
    run: LoopRun,
    slots: int,
    job: Job,
    machine: IterationMachine,
    side: HeadSide,
    carried: tuple[tuple[Change, ...], tuple[str, ...]],
) -> IterationMachine:
    """A job whose files conflict: offered to a merge session when it may have one, its
    result judged by the guard again; else, or when the session does not resolve them, a
    conflict, and the leaf runs again on the new head."""
    changes, conflicts = carried
    place = session_place(run, slots, machine, (job.sandbox, job.events.emit, job.backend))
    onto = (job.base.sha, side.head.sha)
    session = try_session(run, place, machine, onto, changes, conflicts)
    if session is None:
        return refused(machine, Failure.MERGE_CONFLICT, conflict_line(conflicts))
    machine = with_spent(machine, session.tokens, session.cost_usd)
    if session.end is not SessionEnd.RESOLVED:
        line = f"{conflict_line(conflicts)}; {session_line(session.end, session.reason)}"
        refusal = refused(machine, Failure.MERGE_CONFLICT, line)
        return attrs.evolve(refusal, merge_session=session.end.value)
    imported = attrs.evolve(machine.imported or ImportDecision(), changes=session.changes)
    machine = attrs.evolve(machine, imported=imported, merge_session=SessionEnd.RESOLVED.value)
    judged = _guarded_again(run, slots, job, machine, side)
    if judged.failure is None:
        return judged
    line = f"{conflict_line(conflicts)}; {session_line(SessionEnd.GUARD_FAILED, '')}"
    refusal = refused(judged, Failure.MERGE_GUARD, f"{line}; the leaf runs again on the new head")
    return attrs.evolve(refusal, merge_session=SessionEnd.GUARD_FAILED.value)


def _notes_onto(
    run: LoopRun, job: Job, machine: IterationMachine, side: HeadSide
) -> IterationMachine:
    """A job not judged a pass takes only its notes onto the head, merged with what others
    appended since it started; a note that does not merge stays on its attempt's ref alone."""
    imported = machine.imported or ImportDecision()
    notes = tuple(change for change in imported.changes if is_runner_path(change.path))
    if not notes:
        return attrs.evolve(machine, line_notes=())
    changes, conflicts = carry_onto(run.repo, job.base.sha, side.head.sha, notes)
    kept = tuple(change for change in changes if change.path not in conflicts)
    return attrs.evolve(machine, line_notes=kept)


def _guarded_again(
    run: LoopRun, slots: int, job: Job, machine: IterationMachine, side: HeadSide
) -> IterationMachine:
    """A job that passed alone passes only if its guard passes on the merged result too."""
    effect = merge_guard(machine)
    if effect is None:
        return machine
    imported = machine.imported or ImportDecision()
    facts = machine.facts
    commit = merged_commit(
        run.repo,
        side.head.sha,
        imported.changes,
        f"runner: merge of iteration {facts.plan.iteration}",
    )
    # One slot past the jobs' own is the merge queue's: merges run one at a time.
    number, sandbox = slots, slot_sandbox(job.sandbox, slots)
    setup, inputs = facts.config.sandbox.setup, facts.config.sandbox.setup_inputs
    slot_dir = prepare_slot(run.repo, commit, setup, number, sandbox, inputs)
    iter_dir = run.paths.iter_dir(facts.run_id, facts.plan.iteration)
    guards = ProcessGuardRunner(
        slot_dir,
        run.repo,
        iter_dir,
        None,
        facts.config.guard_network,
        sandbox,
        commit,
        setup,
        number,
        job_journal_path(run.repo, facts.plan.iteration),
        setup_inputs=inputs,
    )
    result = guards.run_guard(effect, machine.journal)
    baseline: TestReport | None = known_baseline(run.repo, side.head.sha)
    if isinstance(result, GuardFinished) and merge_guard_passed(machine, baseline, result):
        return machine
    since = tuple(range(job.merged_before + 1, facts.plan.iteration))
    if job.rejudge and side.head.sha == job.base.sha:
        return refused(machine, Failure.MERGE_GUARD, REJUDGED_FAIL)
    return refused(machine, Failure.MERGE_GUARD, broke_after_merge(since))


def run_here(
    run: LoopRun,
    job: Job,
    facts: IterationFacts,
    place: JobPlace,
    agents: AgentRunner | None = None,
) -> IterationMachine:
    """The job's machine up to the merge, in its slot of this machine's scratch checkouts
    (`agents`: what a remote job's agent did, when it did not answer)."""
    try:
        start = job.start or job.base.sha
        sandbox = facts.config.sandbox
        attempt = start != job.base.sha
        setup, inputs = sandbox.setup, sandbox.setup_inputs
        prepare_slot(run.repo, start, setup, job.slot, job.sandbox, inputs, attempt)
    except (SlotError, OSError) as error:
        raise UserFacingError(
            f"the agent's scratch checkout could not be prepared: {error}"
        ) from None
    ports = shell_ports(
        run.paths, run.repo, facts, job.events, job.slot_dir, job.sandbox, place, job.start
    )
    ports = ports if agents is None else attrs.evolve(ports, agents=agents)
    assert ports.scratch is not None
    kept = KeptListing(ports.scratch)
    ports = attrs.evolve(ports, scratch=kept)
    job.machine = drive(start_iteration(facts), ports, job.events, waits_to_merge)
    keep_base_entries(job, kept)
    return job.machine


def job_thread(
    repo: Repo, done: queue.Queue[int], job: Job, machine: Callable[[], IterationMachine]
) -> None:
    """The body of a job's thread: its machine up to the merge from `machine`, what the merge
    and recovery need of it kept beside its journal, its end told on `done`; whatever it
    raises is handed to the main thread, which raises it in turn."""
    try:
        job.machine = machine()
        # The slot is free for the next job: recovery must not take that job's work for this,
        # but this one's, listed already, from beside its journal.
        if job.machine.imported is not None:
            write_job_changes(repo, JobChanges(job.iteration, job.base.sha, job.machine.imported))
        atomic_write_text(job_place_path(repo, job.iteration), f"-1 {job.base.sha}\n")
    except BaseException as error:
        job.error = error
    finally:
        job.ended = time.monotonic()
        done.put(job.iteration)
