"""`runner recover`'s side of a killed loop's remote jobs: the answer of each that is on the
server now is taken, and judged and merged as the loop takes one (`take`'s checks and the
import rules, `[executor] rejudge`, the merge queue's guard run again, the commit), in
iteration order; a job without one (not finished, not reached, refused) is left to recovery,
which records it as interrupted, with the reason its answer was not taken (docs/temporal.md).

It decides nothing of its own: what an answer must be is the coordinator's, its merge is the
merge queue's. It never waits for a job: an answer that is not there now is not taken, and
the job's workflow is cancelled, so that its worker stops running it for no one.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import attrs

from runner_core.iteration.facts import IterationFacts
from runner_core.run.state import run_state_from_text
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import GitError, Repo
from runner_shell.loop.night_loop import LoopRun
from runner_shell.loop.parallel_jobs import Job, JobEvents, merge_job
from runner_shell.loop.remote_loop import NotARequest, kept_request
from runner_shell.remote.coordinator import (
    POLL_SECS,
    Executor,
    RemoteJobs,
    cancel_job,
    remote_jobs,
    take,
)
from runner_shell.remote.errors import (
    JobFailed,
    JobRefused,
    RemoteUnavailable,
    TemporalRefused,
    TemporalUnavailable,
)
from runner_shell.remote.job_files import JobRequest, JobResult, job_id
from runner_shell.scratch.slots import slot_path, slot_sandbox, step_sandbox
from runner_shell.step.event_sink import IterationEvents, sink_for
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state

# What `runner recover` says of a job whose worker has not answered when it looks.
NOT_ANSWERED = "its worker has not answered"


@attrs.define
class AnswerTaker:
    """The answers of a killed loop's remote jobs, taken one at a time in iteration order; the
    Temporal server is reached once, on the first job that needs it."""

    paths: RunnerPaths
    repo: Repo
    remote: RemoteJobs | None = None
    unreached: str | None = None  # why the server cannot be asked: said for every job
    # What became of the workflow of each job whose answer was not there, by iteration.
    said: dict[int, str] = attrs.field(factory=dict)

    def take(self, number: int) -> str | None:
        """Job `number`'s answer taken and committed as the loop commits one (None), else why
        it was not: the job is then the caller's to record as interrupted."""
        state = load_run_state(self.paths)
        if state.run_id is None or state.next_iter != number:
            return f"the run is at iteration {state.next_iter}, not at this job's"
        try:
            request, facts = kept_request(self.repo, state.run_id, number)
        except NotARequest as error:
            return str(error)
        remote = self._connected()
        if remote is None:
            assert self.unreached is not None
            return self.unreached
        said = functools.partial(self.said.__setitem__, number)
        try:
            answer = answer_now(remote.executor, job_id(*_named(request)), said)
        except TimeoutError:
            return NOT_ANSWERED
        except (JobFailed, TemporalUnavailable, TemporalRefused) as error:
            return str(error)
        return self._merged(remote, request, facts, answer)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.executor.close()

    def _connected(self) -> RemoteJobs | None:
        if self.remote is not None or self.unreached is not None:
            return self.remote
        try:
            self.remote = remote_jobs(load_config(self.paths).executor)
        except (TemporalUnavailable, TemporalRefused, UserFacingError) as error:
            self.unreached = str(error)
            return None
        if self.remote is None:
            self.unreached = "[executor] sends no job to a worker now: its answer is not looked for"
        return self.remote

    def _merged(
        self, remote: RemoteJobs, request: JobRequest, facts: IterationFacts, answer: str
    ) -> str | None:
        """The answer checked as the loop checks one, then merged and committed as the merge
        queue merges a job; why not, when it is refused."""
        paths, repo = self.paths, self.repo
        config = load_config(paths)
        events = JobEvents(IterationEvents(sink_for(paths, config, facts.run_id)), threading.Lock())
        try:
            taken = take(repo, remote.repo_url, request, JobResult.from_json(answer), events)
        except (JobRefused, RemoteUnavailable, GitError) as error:
            return str(error)
        assert facts.head is not None
        sandbox = slot_sandbox(step_sandbox(paths, repo, config), 0)
        job = Job(
            request.iteration,
            facts.plan.selection.path,
            0,
            facts.head,
            events,
            sandbox,
            slot_path(repo, 0),
            _merged_before(repo, paths, facts),
        )
        job.base_entries = taken.base_entries
        job.rejudge = config.executor.rejudge
        run = LoopRun(paths, repo, 0, _silent, 0)
        merge_job(run, config.parallel_slots, job, taken.machine, threading.Lock())
        return None


def answer_now(executor: Executor, name: str, said: Callable[[str], None]) -> str:
    """Job `name`'s answer when the server has it now. When it has none (TimeoutError), the
    job's workflow is cancelled, so that its worker stops the job at its next heartbeat instead
    of running it for no one, and `said` hears so; a job that finished meanwhile answers."""
    try:
        return executor.result(name, POLL_SECS)
    except TimeoutError:
        cancelled = cancel_job(executor, name)
        if cancelled is not None:
            said(cancelled)
            raise
    return executor.result(name, POLL_SECS)


def _named(request: JobRequest) -> tuple[str, int, str]:
    return request.run_id, request.iteration, request.base


def _merged_before(repo: Repo, paths: RunnerPaths, facts: IterationFacts) -> int:
    """The last iteration committed when the job started: its start commit's run state says."""
    assert facts.head is not None
    found = repo.file_at(facts.head.sha, paths.relative(paths.run_state))
    try:
        return int(run_state_from_text(found or b"").next_iter) - 1
    except ValueError:
        return facts.plan.iteration - 1


def _silent(line: str) -> None:
    del line
