"""The parallel loop's jobs on other machines: each sent to a worker and its answer taken, and,
when the loop starts again after it was killed, the jobs it had sent found by their requests
and waited for instead of being run again (docs/temporal.md).

It decides nothing of what runs: the scheduling is the parallel loop's, the job's machine the
core's, and what a job that does not answer becomes is `Unanswered`'s (a runner error, or
interrupted). It only carries a job to its worker and back.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from datetime import timedelta

import attrs

from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.loop.events import waiting
from runner_core.run.executor_config import ExecutorConfig
from runner_core.views.loop_lines import waiting_line
from runner_shell.errors import UserFacingError, failure_line
from runner_shell.git.repo import Repo
from runner_shell.loop.night_loop import LoopRun, loop_now, loop_origin
from runner_shell.loop.parallel_jobs import Job, JobEvents, job_thread, run_here
from runner_shell.loop.parallel_merges import ParallelLoop
from runner_shell.remote import wire
from runner_shell.remote.coordinator import (
    NO_WORKERS_SECS,
    UNREACHABLE,
    JobLost,
    RemoteJobs,
    Unanswered,
    answer_of,
    cancel_job,
    remote_jobs,
    request_for,
    until_reached,
)
from runner_shell.remote.errors import JobRefused, TemporalUnavailable
from runner_shell.remote.job_files import JobRequest, job_id
from runner_shell.scratch.slots import slot_path, slot_sandbox, step_sandbox
from runner_shell.signals import Interrupted, interruptible
from runner_shell.step.event_sink import Emitter, IterationEvents, sink_for
from runner_shell.step.lock_and_journal import (
    job_journal_path,
    job_journals,
    job_request_path,
    read_journal,
    write_journal,
)
from runner_shell.step.runner import JobPlace, Loaded
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state


def run_remote(
    loop: ParallelLoop, job: Job, facts: IterationFacts, place: JobPlace
) -> IterationMachine:
    """The job's machine up to the merge, run by a worker. Its journal is kept here while it
    runs, as a local job's, for the views and for `runner recover`, and its request beside
    it, for a loop started again; a job that does not answer runs here as a runner error, one
    a signal stopped as interrupted."""
    remote = loop.remote
    assert remote is not None
    repo = loop.run.repo
    write_journal(repo, start_iteration(facts).journal, place.journal_file)
    try:
        said = functools.partial(_waiting, loop, job)
        request = until_reached(lambda: request_for(remote, repo, facts, job.start), said)
        atomic_write_text(job_request_path(repo, job.iteration), request.to_json())
    except Interrupted as signal_:
        return run_here(loop.run, job, facts, place, Unanswered(signal=signal_.name))
    return _answer(loop, job, facts, place, request)


def _answer(
    loop: ParallelLoop, job: Job, facts: IterationFacts, place: JobPlace, request: JobRequest
) -> IterationMachine:
    remote = loop.remote
    assert remote is not None
    try:
        said = functools.partial(_waiting, loop, job)
        taken = answer_of(remote, loop.run.repo, request, job.events, said)
    except JobLost as lost:
        return run_here(loop.run, job, facts, place, Unanswered(lost.line))
    except Interrupted as signal_:
        # Its iteration is committed as interrupted: the job's answer would be for no one.
        cancelled = cancel_job(
            remote.executor, job_id(request.run_id, request.iteration, request.base)
        )
        if cancelled is not None:
            loop.run.emit(f"loop: iter={job.iteration} {cancelled}")
        return run_here(loop.run, job, facts, place, Unanswered(signal=signal_.name))
    job.base_entries = taken.base_entries
    job.rejudge = facts.config.executor.rejudge
    return taken.machine


def _waiting(loop: ParallelLoop, job: Job, reason: str, secs: int) -> None:
    """A remote job waits on (no worker polls its queue, the server does not answer): the
    loop says so."""
    _say_waiting(loop.run, job.events, job.iteration, reason, secs)


def _say_waiting(run: LoopRun, events: Emitter, iteration: int, reason: str, secs: int) -> None:
    until = (loop_now() + timedelta(seconds=secs)).isoformat(timespec="seconds")
    until = until.replace("+00:00", "Z")
    run_id = load_run_state(run.paths).run_id or ""
    events.emit((waiting(loop_origin(run_id, iteration), reason, until, secs),))
    run.emit(waiting_line(run_id, reason, until, secs))


def jobs_to_resume(paths: RunnerPaths, repo: Repo) -> tuple[int, ...]:
    """The remote jobs a killed loop left that a loop started again waits for: every job
    journal left, when each is a remote job's (its request beside it), none is committed and
    they follow the last commit without a gap; otherwise none (`runner recover` first)."""
    journals = job_journals(repo)
    if not journals or read_journal(repo) is not None:
        return ()
    numbers = tuple(number for number, _ in journals)
    first = load_run_state(paths).next_iter
    if numbers != tuple(range(first, first + len(numbers))):
        return ()
    if not all(job_request_path(repo, number).is_file() for number in numbers):
        return ()
    return numbers


def resume_jobs(loop: ParallelLoop, loaded: Loaded, numbers: tuple[int, ...]) -> None:
    """Jobs `numbers`, sent by a loop that was killed, waited for again in slots of this one
    (their workers go on, or Temporal hands them to others): none runs twice."""
    for slot, number in enumerate(numbers):
        try:
            request, facts = kept_request(loop.run.repo, loaded.run_id, number)
        except NotARequest as error:
            raise UserFacingError(
                f"{error}; run 'runner recover' to record the jobs as interrupted"
            ) from None
        # This loop now waits for it: its journal names this process.
        facts = attrs.evolve(facts, runner_pid=os.getpid())
        _resume(loop, loaded, facts, request, slot)


class NotARequest(Exception):
    """A kept request that is not job `number`'s of the run: the line says which and why."""


def kept_request(repo: Repo, run_id: str, number: int) -> tuple[JobRequest, IterationFacts]:
    """Job `number`'s request, as the killed loop kept it beside its journal, and its facts;
    NotARequest when it cannot be read or is another job's."""
    kept = job_request_path(repo, number)
    try:
        request = JobRequest.from_json(kept.read_text(encoding="utf-8"))
        facts = wire.loads(request.facts, IterationFacts)
    except (JobRefused, wire.WireError, OSError, UnicodeDecodeError) as error:
        raise NotARequest(
            f"{kept}: not the request of a job this loop can wait for ({error})"
        ) from None
    if (facts.run_id, facts.plan.iteration) != (run_id, number) or request.iteration != number:
        raise NotARequest(f"{kept}: the request of another job")
    return request, facts


def _resume(
    loop: ParallelLoop, loaded: Loaded, facts: IterationFacts, request: JobRequest, slot: int
) -> None:
    run = loop.run
    assert facts.head is not None
    sink = IterationEvents(sink_for(run.paths, loaded.config, loaded.run_id))
    sandbox = slot_sandbox(step_sandbox(run.paths, run.repo, loaded.config), slot)
    events = JobEvents(sink, loop.lock)
    path = facts.plan.selection.path
    job = Job(
        request.iteration,
        path,
        slot,
        facts.head,
        events,
        sandbox,
        slot_path(run.repo, slot),
        loop.merged_upto,
    )
    job.start, job.resumed = request.start, facts.resumed
    loop.jobs[job.iteration] = job
    place = JobPlace(slot, job_journal_path(run.repo, job.iteration))
    write_journal(run.repo, start_iteration(facts).journal, place.journal_file)

    def machine() -> IterationMachine:
        return _answer(loop, job, facts, place, request)

    name = f"runner-job-{job.iteration}"
    args = (run.repo, loop.done, job, machine)
    threading.Thread(target=job_thread, args=args, name=name, daemon=True).start()


def connected(run: LoopRun, config: ExecutorConfig) -> RemoteJobs | None:
    """Where `[executor]` sends jobs (None: this machine's slots). A Temporal server that does
    not answer is said, and waited out until it does (a signal ends the wait)."""
    while True:
        try:
            return remote_jobs(config)
        except TemporalUnavailable as error:
            print(failure_line(str(error)), file=sys.stderr, flush=True)
            state = load_run_state(run.paths)
            sink = sink_for(run.paths, load_config(run.paths), state.run_id or "")
            _say_waiting(run, sink, state.next_iter, UNREACHABLE, NO_WORKERS_SECS)
        with interruptible():
            time.sleep(NO_WORKERS_SECS)
