"""`runner loop` with `[parallel] slots` above one: several leaves at once, merged in order.

The frontier (runner_core.parallel.frontier) says which leaves start; each job is one iteration,
numbered when it is scheduled, whose machine runs in a thread of its own in its own sandboxed
slot from the run branch's head as it was then, and stops where only the merge queue may go on
(`job_merge.waits_to_merge`). Jobs merge in iteration order (`queue.next_to_merge`), in the
merge queue's thread (loop/parallel_merges.py) while the loop goes on starting jobs: the
head's side is read, the job's tree and files are merged onto it as `job_merge` decides, the
guard runs again on the merged result when other work merged since the job started, and the
machine then commits as a one-slot iteration does. The policy hears each merged job as it hears
a step; a stop, a budget, a usage limit or a signal stops scheduling and lets the running jobs
end (a signal stops their processes: they commit as interrupted, in order). See
docs/parallel.md.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import assert_never

import attrs

from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.iteration.events import loop_step_result
from runner_core.iteration.machine import IterationMachine
from runner_core.iteration.plan import PlanKind, RunPlan, role_of
from runner_core.loop import policy as policy
from runner_core.loop.budget import exhausted_budget, with_in_flight
from runner_core.loop.fallback import backend_chain, choose_backend
from runner_core.loop.usage_limits import wait_until
from runner_core.parallel.frontier import FrontierLeaf, frontier
from runner_core.parallel.scheduling import JobSlot, may_start, plan_starts, told_state
from runner_core.run.config import NO_BUDGET, Config
from runner_core.run.outside_change import GitHead
from runner_core.run.role_agents import iteration_config, role_config
from runner_core.run.state import RunState
from runner_core.tree.model import AgentRole
from runner_core.tree.selection import OpenLeaf
from runner_core.views import loop_lines
from runner_shell.guard.baselines import known_baseline
from runner_shell.loop.night_loop import (
    LoopRun,
    announce_start,
    budget_stop,
    interrupted,
    loop_now,
    loop_origin,
    role_chain,
    stopped,
)
from runner_shell.loop.parallel_jobs import Job, JobEvents, in_flight, job_thread, run_here
from runner_shell.loop.parallel_merges import (
    ParallelLoop,
    after_merge,
    decompose_stuck,
    end_merging,
    left_behind,
    merge_next,
    stop_told,
    told_once,
)
from runner_shell.loop.questions import read_questions
from runner_shell.loop.remote_loop import connected, jobs_to_resume, resume_jobs, run_remote
from runner_shell.loop.run_branch import BranchWatch
from runner_shell.sandbox.status import sandbox_status
from runner_shell.scratch.sandbox import runs_confined
from runner_shell.scratch.slots import slot_path, slot_sandbox, step_sandbox
from runner_shell.signals import (
    Interrupted,
    Interrupts,
    interruptible,
    signals_handled,
    stop_jobs,
)
from runner_shell.steer.stop import clear_stop_request, pause_if_requested, stop_request_path
from runner_shell.step.attempt_start import attempt_start, told_record
from runner_shell.step.budgets import budget_summary
from runner_shell.step.event_sink import IterationEvents, sink_for
from runner_shell.step.lock_and_journal import (
    job_journal_path,
    job_place_path,
)
from runner_shell.step.repository_checks import check_programs
from runner_shell.step.runner import JobPlace, Loaded, StepRan, gather, load_for_step, run_step
from runner_shell.store.files import atomic_write_text
from runner_shell.store.state_files import (
    load_config,
    load_run_state,
    load_tree_and_sha256,
)

# How often the waiting loop looks up when no job finishes (a stop request, a wait's end).
_POLL_SECS = 1.0
# How long a failed loop waits for its jobs' processes to stop (each gets a grace period).
_ABANDON_SECS = 30.0


def run_parallel_loop(
    run: LoopRun, progress: Callable[[], None] | None, max_steps: int | None
) -> int:
    """Run jobs in `[parallel] slots` slots until the policy stops the loop; see the module."""
    with signals_handled():
        try:
            remote = connected(run, load_config(run.paths).executor)
        except Interrupted as signal_:
            return interrupted(run, signal_.exit_code)
        # A killed loop's remote jobs are waited for again, not run again (docs/temporal.md).
        resumed = () if remote is None else jobs_to_resume(run.paths, run.repo)
        loaded = load_for_step(run.paths, run.repo, frozenset(resumed))
        loop = ParallelLoop(run, loaded.config.parallel_slots, max_steps, remote=remote)
        loop.merged_upto = loaded.state.next_iter - 1
        confined = sandbox_status(loaded.config).bwrap is not None
        loop.watch = BranchWatch(run.repo, loaded.head, str(run.paths.root), confined)
        resume_jobs(loop, loaded, resumed)
        loop.asked = read_questions(run.paths)
        loop.told = _last_told(run, loaded.state)
        clear_stop_request(run.repo)
        announce_start(run)
        try:
            return _go(loop, progress)
        except Interrupted as signal_:
            _drain(loop)
            return interrupted(run, signal_.exit_code)
        except BaseException:
            _abandon(loop)
            raise
        finally:
            if remote is not None:
                remote.executor.close()


def _abandon(loop: ParallelLoop) -> None:
    """The loop itself failed with jobs running: their processes stop and their threads end,
    and their journals stay for `runner recover` (nothing is merged past a failure)."""
    stop_jobs()
    deadline = time.monotonic() + _ABANDON_SECS
    if loop.merging is not None:  # its job's journal stays too: nothing is booked
        loop.merging.ended.wait(_ABANDON_SECS)
        loop.jobs.pop(loop.merging.job.iteration, None)
    while len(loop.finished) < len(loop.jobs) and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            loop.heard(loop.done.get(timeout=_POLL_SECS))


def _go(loop: ParallelLoop, progress: Callable[[], None] | None) -> int:
    """Keep every slot busy, then merge the next job whose turn it is, one at a time in the
    merge queue's thread: a merge (its commit, its guard run again) keeps no free slot
    waiting."""
    while True:
        if progress is not None:
            progress()
        _collect(loop)
        if loop.draining and not loop.jobs:
            loop.draining = False  # every job merged: the stop is checked and told now
        stopping = loop.ending is not None or loop.failure is not None or loop.draining
        if not stopping and may_start(
            loop.slots, _job_slots(loop), time.monotonic(), loop.resume_at
        ):
            ending = _schedule(loop)
            if ending is not None and not loop.jobs:
                return ending
            loop.ending = ending
        if merge_next(loop):
            continue
        if loop.failure is not None and (not loop.jobs or left_behind(loop)):
            raise loop.failure
        if loop.ending is not None and not loop.jobs:
            return loop.ending
        _wait_for_a_job(loop)


def _collect(loop: ParallelLoop) -> None:
    """Take note of every job whose thread has ended since the last look, without waiting."""
    with contextlib.suppress(queue.Empty):
        while True:
            loop.heard(loop.done.get_nowait())


def _must_stop(loop: ParallelLoop, run_state: RunState, config: Config) -> bool:
    """Whether a stop request or a `[budget]` (counting the jobs not yet committed) ends the
    scheduling now; it is told, and the request taken, once no job runs."""
    if stop_request_path(loop.run.repo).exists():
        return True
    if run_state.run_id is None or config.budget == NO_BUDGET:
        return False
    flying = tuple(in_flight(job) for job in loop.jobs.values())
    summary = with_in_flight(budget_summary(loop.run.paths, config, run_state.run_id), flying)
    return exhausted_budget(config.budget, summary) is not None


def _job_slots(loop: ParallelLoop) -> tuple[JobSlot, ...]:
    """The jobs not yet merged as scheduling sees them: a job waiting for its turn to merge
    holds no slot (its work is listed already; its guard runs again, if it must, in the merge
    slot), and one that ended at a usage limit pauses the starting."""
    return tuple(
        JobSlot(
            number,
            job.slot,
            finished=number in loop.finished,
            limited=job.machine is not None and job.machine.limit is not None,
        )
        for number, job in sorted(loop.jobs.items())
    )


def _wait_for_a_job(loop: ParallelLoop) -> None:
    with interruptible(), contextlib.suppress(queue.Empty):
        loop.heard(loop.done.get(timeout=_POLL_SECS))
    pending = Interrupts.exit_code()
    if pending is not None:
        raise Interrupted(pending - 128)


def _drain(loop: ParallelLoop) -> None:
    """After a signal: every running job's processes stop; each is committed, in order, on
    this thread once the merge in flight has ended."""
    end_merging(loop)
    while loop.jobs and not left_behind(loop):
        with contextlib.suppress(queue.Empty):
            loop.heard(loop.done.get(timeout=_POLL_SECS))
        while merge_next(loop, policy_hears=False, in_thread=False):
            _collect(loop)


# ---------------------------------------------------------------- scheduling


def _schedule(loop: ParallelLoop) -> int | None:
    """Start jobs on the frontier's leaves; the loop's exit code when it must stop instead.
    What it reads (state, tree, head) a merge in flight writes only under the same lock."""
    with loop.state_lock:
        return _schedule_locked(loop)


def _schedule_locked(loop: ParallelLoop) -> int | None:
    run = loop.run
    # What moved the branch is told before its files are read: they are its head's.
    head = _head_now(loop, loop.merged_upto + 1)
    run_state, config = load_run_state(run.paths), load_config(run.paths)
    if loop.jobs and _must_stop(loop, run_state, config):
        loop.draining = True  # told once the running jobs have merged, as the last line
        return None
    code = pause_if_requested(
        run.paths, run.repo, run_state, config, loop.steps, run.started_at, run.emit
    )
    if code is None:
        code = budget_stop(run, run_state, config, loop.state, loop.steps)
    if code is not None:
        return code
    tree, tree_sha256 = load_tree_and_sha256(run.paths)
    running = frozenset(job.path for job in loop.jobs.values())
    starts = plan_starts(
        loop.slots,
        _job_slots(loop),
        run_state.next_iter,
        loop.merged_upto,
        max_iterations=config.max_iterations,
        max_steps=loop.max_steps,
        steps=loop.steps,
    )
    leaves = frontier(tree, len(starts.slots), running, frozenset(loop.conflicted)).leaves
    if not leaves:
        if loop.jobs:
            return None
        return _one_slot_step(loop)
    assert run_state.run_id is not None
    loaded = Loaded(config, run_state, tree, run_state.run_id, head, tree_sha256)
    for number, (leaf, slot) in enumerate(zip(leaves, starts.slots, strict=False)):
        role = role_of(leaf.node)
        agent = role_config(config, role)
        chain = backend_chain(agent.agent_backend, agent.agent_fallback)
        choice = choose_backend(chain, loop.limited, loop_now())
        if choice.backend is None:
            _pause_for_reset(loop, run_state.run_id, choice.wait_until)
            break
        job_config = iteration_config(config, role, choice.backend)
        check_programs(job_config, run.paths.root)
        job_loaded = attrs.evolve(loaded, config=job_config)
        _start(loop, job_loaded, leaf, starts.first + number, slot, role)
    return None


def _pause_for_reset(loop: ParallelLoop, run_id: str, until: str | None) -> None:
    """Every backend of a leaf's chain is limited: nothing starts before the first reset."""
    signal = LimitSignal(LimitKind.USAGE_LIMITED, "", retry_at=until)
    wait = wait_until(signal, loop_now(), load_config(loop.run.paths).loop.max_wait_secs, 0)
    loop.run.emit(loop_lines.wait_line(run_id, wait, "every_backend_limited"))
    loop.resume_at = time.monotonic() + wait.secs


def _head_now(loop: ParallelLoop, iteration: int) -> GitHead:
    """The run branch's head to start from: the loop's own, or the operator's commits on it,
    told once; a change the runner does not take stops the loop (UserFacingError)."""
    if loop.watch is None:
        return loop.run.repo.head()
    head, notice = loop.watch.check(iteration)
    told_once(notice)
    return head


def _one_slot_step(loop: ParallelLoop) -> int | None:
    """Nothing runs and no leaf may start: the tree is complete, its leaf stuck or the
    iteration limit reached, which a one-slot step tells the policy as it always does."""
    run = loop.run
    loaded = load_for_step(run.paths, run.repo)
    choice = choose_backend(role_chain(loaded), loop.limited, loop_now())
    if choice.backend is None:
        _pause_for_reset(loop, loaded.run_id, choice.wait_until)
        return None
    result = run_step(run.paths, run.repo, run.prompt_budget, loaded, choice.backend)
    if loop.watch is not None:
        loop.watch.made()
    config = load_config(run.paths)
    if result.kind is PlanKind.RUN:  # a leaf the frontier did not offer: told as any step
        assert isinstance(result, StepRan)
        return after_merge(loop, result, config.max_iterations, choice.backend)
    step = loop_step_result(result.plan, result.outcome, result.limit)
    decision = policy.after_step(
        loop.state, step, config.loop, loop_now(), steps=loop.steps, max_steps=loop.max_steps
    )
    origin = attrs.evolve(loop_origin(result.run_id, result.plan.iteration), node_id=step.node_id)
    sink_for(run.paths, config, result.run_id).emit(
        policy.decision_events(decision, origin, config.loop, step, loop.steps), fsync=True
    )
    loop.state = decision.state
    match decision:
        case policy.Decompose(node_id=node_id):
            decompose_stuck(loop, node_id)
            return None
        case policy.Stop():
            return stop_told(loop, lambda: stopped(run, config, result, step, decision, loop.steps))
        case policy.Continue() | policy.Wait():
            return None
        case _:
            assert_never(decision)


def _last_told(run: LoopRun, state: RunState) -> dict[str, tuple[int, RunState]]:
    """The run's last iteration, when it is the head commit, as its node's last: what it left
    reaches that node's next job as it reaches a one-slot loop's next step."""
    if state.next_iter <= 1:
        return {}
    format_ = "%(trailers:key=Runner-Iter,valueonly)%x00%(trailers:key=Runner-Node,valueonly)"
    shown = run.repo.git("log", "-1", f"--format={format_}", check=False).stdout
    iteration, _, node_id = (part.strip() for part in shown.partition("\0"))
    if iteration != str(state.next_iter - 1) or not node_id:
        return {}
    return {node_id: (state.next_iter - 1, state)}


def _start(
    loop: ParallelLoop,
    loaded: Loaded,
    leaf: FrontierLeaf,
    iteration: int,
    slot: int,
    role: AgentRole,
) -> None:
    """Job `iteration` on `leaf` in slot `slot`: its journal's place is written here, the rest
    of its start (facts, the slot's reset) happens in its own thread, beside the others."""
    run = loop.run
    node = leaf.node
    state, told = told_state(loop.told, loaded.state, node.id)
    loaded = attrs.evolve(loaded, state=state)
    plan = RunPlan(OpenLeaf(node, leaf.path), iteration, node, role)
    sink = IterationEvents(sink_for(run.paths, loaded.config, loaded.run_id))
    sink.check()
    sandbox = slot_sandbox(step_sandbox(run.paths, run.repo, loaded.config), slot)
    events = JobEvents(sink, loop.lock)
    slot_dir = slot_path(run.repo, slot)
    job = Job(iteration, leaf.path, slot, loaded.head, events, sandbox, slot_dir, loop.merged_upto)
    job.backend = loaded.config.agent_backend
    # Here or on a worker, the node's checkout starts from its previous attempt's files.
    record = told_record(run.paths.iter_dir(loaded.run_id, told or iteration - 1))
    start, job.resumed = attempt_start(run.repo, loaded.run_id, node.id, record, job.base.sha)
    job.start = None if start == job.base.sha else start
    loop.jobs[iteration] = job
    place = JobPlace(slot, job_journal_path(run.repo, iteration))
    place.journal_file.parent.mkdir(parents=True, exist_ok=True)
    # A remote job's work is on its worker: recovery takes none from this machine's slot.
    here = slot if loop.remote is None else -1
    atomic_write_text(job_place_path(run.repo, iteration), f"{here} {loaded.head.sha}\n")
    thread = threading.Thread(
        target=_run_job,
        args=(loop, job, loaded, plan, place, told),
        name=f"runner-job-{iteration}",
        daemon=True,
    )
    thread.start()


def _run_job(
    loop: ParallelLoop, job: Job, loaded: Loaded, plan: RunPlan, place: JobPlace, told: int | None
) -> None:
    """A job's thread: its facts, its machine up to the merge (in its slot, or on a worker);
    whatever it raises is handed to the main thread, which raises it in turn."""
    run = loop.run

    def machine() -> IterationMachine:
        confined = runs_confined(job.sandbox)
        facts = attrs.evolve(
            gather(run.paths, loaded, plan, run.prompt_budget, told, confined),
            head=loaded.head,
            scratch=True,
            baseline=known_baseline(run.repo, loaded.head.sha),
            job_base=loaded.head.sha,
            checkout=str(run.paths.root),
            confined=confined,
            resumed=job.resumed,
        )
        if loop.remote is None:
            return run_here(run, job, facts, place)
        return run_remote(loop, job, facts, place)

    job_thread(run.repo, loop.done, job, machine)
