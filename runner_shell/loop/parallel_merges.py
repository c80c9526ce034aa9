"""The parallel loop's state and its merge queue: jobs merge one at a time, in iteration order.

`ParallelLoop` is what the loop holds between two looks at its jobs. The job whose turn it is
(`queue.next_to_merge`) merges in the merge queue's own thread (`merge_job`), so the loop goes
on starting jobs in the slots that free meanwhile: what a merge writes (the state files, the
commit) happens under `state_lock`, which scheduling holds too, so a job never starts from a
head and a tree that do not belong together. A merge is booked on the loop's thread once it
has ended, before the next one starts: the job leaves the running ones, the policy hears it.
After a signal the queue merges on the loop's thread, one job after another (docs/parallel.md).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import assert_never

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.iteration.events import loop_step_result
from runner_core.iteration.plan import advance_run_state
from runner_core.loop import policy as policy
from runner_core.loop.fallback import backend_chain, fall_back
from runner_core.parallel.queue import next_to_merge
from runner_core.run.role_agents import role_config
from runner_core.run.state import RunState
from runner_core.views import loop_lines
from runner_shell.errors import UserFacingError
from runner_shell.loop.night_loop import (
    LoopRun,
    hand_to_decomposer,
    loop_now,
    loop_origin,
    stopped,
)
from runner_shell.loop.parallel_jobs import Job, merge_job
from runner_shell.loop.questions import announce_new_questions, read_questions
from runner_shell.loop.run_branch import BranchWatch
from runner_shell.remote.coordinator import RemoteJobs
from runner_shell.signals import Interrupted
from runner_shell.step.event_sink import sink_for
from runner_shell.step.lock_and_journal import (
    job_changes_path,
    job_journal_path,
    job_place_path,
    job_request_path,
    job_worker_path,
)
from runner_shell.step.runner import StepRan, step_result_line
from runner_shell.store.state_files import load_config

# Put on `ParallelLoop.done` when a merge ends: no job has that number.
MERGE_ENDED = 0


@attrs.define
class Merging:
    """The merge running in the merge queue's thread, and what it left once `ended`."""

    job: Job
    result: tuple[StepRan, bool] | None = None
    error: BaseException | None = None
    ended: threading.Event = attrs.field(factory=threading.Event)


@attrs.define
class ParallelLoop:
    """What the parallel loop holds between two looks at its jobs."""

    run: LoopRun
    slots: int
    max_steps: int | None
    lock: threading.Lock = attrs.field(factory=threading.Lock)  # the shared event log's
    state_lock: threading.Lock = attrs.field(factory=threading.Lock)  # state files and head
    done: queue.Queue[int] = attrs.field(factory=queue.Queue)
    jobs: dict[int, Job] = attrs.field(factory=dict)  # scheduled, not yet booked as merged
    finished: set[int] = attrs.field(factory=set)
    merging: Merging | None = None
    merged_upto: int = 0
    steps: int = 0
    state: policy.LoopState = attrs.field(factory=policy.LoopState)
    resume_at: float = 0.0  # a usage-limit or backoff wait: nothing starts before then
    ending: int | None = None  # the exit code, once the loop stops scheduling
    draining: bool = False  # a stop or budget was met: no job starts until the others merged
    failure: BaseException | None = None  # a job's error, raised once every job has merged
    asked: str | None = None  # questions.md after the last merge: a job's new ones are told
    # Each node's last iteration and what it left to tell its next (history.md, failure.md).
    told: dict[str, tuple[int, RunState]] = attrs.field(factory=dict)
    remote: RemoteJobs | None = None  # where jobs run when not in this machine's slots
    # A job that ended without a commit (an error, a merge a signal stopped): it stays first
    # in line, so no later job merges; they are left, journals kept, to the loop started
    # again or to `runner recover`, which take them in iteration order.
    halted_at: int | None = None
    # Leaves whose work once met another's (a merge's rerun): the frontier runs them alone.
    conflicted: set[str] = attrs.field(factory=set)
    # `[agent] fallback`: each backend's limit in force (backend -> reset, ISO-8601 UTC).
    limited: PMap[str, str] = attrs.field(factory=pmap)
    # The head the loop last made: one it did not make is the operator's (run_branch).
    watch: BranchWatch | None = None

    def heard(self, number: int) -> None:
        """A number from `done`: a job whose thread ended (a merge's end only wakes the loop)."""
        if number != MERGE_ENDED:
            self.finished.add(number)


def merge_next(loop: ParallelLoop, policy_hears: bool = True, in_thread: bool = True) -> bool:
    """Book the merge that has ended, or start the next job's whose turn it is (in the merge
    queue's thread unless not `in_thread`: then it is merged and booked before this returns);
    whether either happened."""
    merging = loop.merging
    if merging is not None:
        if not merging.ended.is_set():
            return False
        loop.merging = None
        _book(loop, merging, policy_hears)
        return True
    if loop.halted_at is not None:
        return False
    number = next_to_merge(frozenset(loop.finished), loop.merged_upto, tuple(sorted(loop.jobs)))
    if number is None:
        return False
    job = loop.jobs[number]
    if job.error is not None or job.machine is None:
        loop.halted_at = number
        loop.failure = loop.failure or job.error or RuntimeError("a job ended without a result")
        loop.ending = loop.ending if loop.ending is not None else 1
        return True
    merging = Merging(job)
    if not in_thread:
        _merge(loop, merging)
        _book(loop, merging, policy_hears)
        return True
    loop.merging = merging
    name = f"runner-merge-{number}"
    threading.Thread(target=_merge, args=(loop, merging), name=name, daemon=True).start()
    return True


def end_merging(loop: ParallelLoop, deadline: float | None = None) -> None:
    """Wait for the merge in flight to end (until `deadline`, on the monotonic clock) and book
    it without the policy hearing it. One a signal stopped is left to `runner recover`, as a
    job's is."""
    merging = loop.merging
    if merging is None:
        return
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    if not merging.ended.wait(timeout):
        return
    loop.merging = None
    if isinstance(merging.error, Interrupted):
        loop.halted_at = merging.job.iteration
        return
    _book(loop, merging, policy_hears=False)


def left_behind(loop: ParallelLoop) -> bool:
    """Whether the loop merges no more: a job stays first in line without a commit and every
    job's thread has ended (the ones after it are left as they are, in order)."""
    return loop.halted_at is not None and set(loop.jobs) <= loop.finished


def _merge(loop: ParallelLoop, merging: Merging) -> None:
    job = merging.job
    assert job.machine is not None
    try:
        merging.result = merge_job(
            loop.run, loop.slots, job, job.machine, loop.state_lock, loop.watch
        )
    except BaseException as error:  # raised on the loop's thread, when it books the merge
        merging.error = error
    finally:
        merging.ended.set()
        loop.done.put(MERGE_ENDED)


def _booked(loop: ParallelLoop, job: Job) -> None:
    """The job leaves the running ones: every job up to it is merged (or dropped)."""
    loop.jobs.pop(job.iteration, None)
    loop.finished.discard(job.iteration)
    loop.merged_upto = job.iteration


def _book(loop: ParallelLoop, merging: Merging, policy_hears: bool) -> None:
    """What follows a merge on the loop's thread: its files gone, its line, its questions, the
    policy's decision; a merge's error is raised here."""
    number = merging.job.iteration
    _booked(loop, merging.job)
    if merging.error is not None:
        raise merging.error
    assert merging.result is not None
    result, rerun = merging.result
    left = (job_journal_path, job_place_path, job_changes_path, job_request_path, job_worker_path)
    for path in left:
        path(loop.run.repo, number).unlink(missing_ok=True)
    loop.steps += 1
    loop.told[result.plan.node.id] = (number, advance_run_state(RunState(), result.outcome))
    if rerun:
        loop.conflicted.add(result.plan.node.id)
    loop.run.emit(step_result_line("loop: step", result))
    told_once(result.notice)
    paths = loop.run.paths
    announce_new_questions(paths, load_config(paths), result.run_id, number, loop.asked)
    loop.asked = read_questions(paths)
    if policy_hears and not rerun and loop.ending is None:
        maximum = load_config(loop.run.paths).max_iterations
        loop.ending = after_merge(loop, result, maximum, merging.job.backend)


def decompose_stuck(loop: ParallelLoop, node_id: str) -> None:
    """`on_stuck = "decompose"`: the operator's commit the loop makes for it moves the run
    branch, which the loop's watch then knows is its own."""
    hand_to_decomposer(loop.run, node_id)
    if loop.watch is not None:
        loop.watch.made()


def told_once(notice: str | None) -> None:
    """The line telling the operator the change they made to the run branch was taken."""
    if notice is not None:
        print(f"runner: {notice}", file=sys.stderr, flush=True)


def after_merge(
    loop: ParallelLoop, result: StepRan, max_iterations: int, backend: str | None = None
) -> int | None:
    """What the policy makes of a merged job, as of a one-slot step, its agent's `backend`
    falling back as the one-slot loop's does; the exit code of a stop."""
    run = loop.run
    config = load_config(run.paths)
    step = loop_step_result(result.plan, result.outcome, result.limit)
    left = max_iterations - result.plan.iteration
    decision = policy.after_step(
        loop.state,
        step,
        config.loop,
        loop_now(),
        steps=loop.steps,
        max_steps=loop.max_steps,
        iterations_left=left,
    )
    origin = attrs.evolve(loop_origin(result.run_id, result.plan.iteration), node_id=step.node_id)
    events = policy.decision_events(decision, origin, config.loop, step, loop.steps)
    if backend is not None:
        agent = role_config(config, result.plan.role)
        chain = backend_chain(agent.agent_backend, agent.agent_fallback)
        fell = fall_back(chain, loop.limited, backend, decision, events, result.limit, origin)
        loop.limited, decision, events = fell.limited, fell.decision, fell.events
        if fell.to is not None:
            until = loop.limited[backend]
            run.emit(loop_lines.fallback_line(result.run_id, backend, fell.to, until))
    sink_for(run.paths, config, result.run_id).emit(events, fsync=True)
    loop.state = decision.state
    match decision:
        case policy.Continue():
            return None
        case policy.Wait(wait=wait, reason=reason):
            run.emit(loop_lines.wait_line(result.run_id, wait, reason))
            loop.resume_at = time.monotonic() + wait.secs
            return None
        case policy.Decompose(node_id=node_id):
            decompose_stuck(loop, node_id)
            return None
        case policy.Stop():
            return stop_told(loop, lambda: stopped(run, config, result, step, decision, loop.steps))
        case _:
            assert_never(decision)


def stop_told(loop: ParallelLoop, tell: Callable[[], int]) -> int:
    """The stop's exit code; a runner error's line waits until the running jobs have merged."""
    try:
        return tell()
    except UserFacingError as error:
        loop.failure = loop.failure or error
        return 1
