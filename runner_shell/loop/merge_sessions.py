"""A merge session carried out: the agent, role `merger`, joins a job's conflicting files.

runner_core.parallel.merge_session decides whether a job's conflicts go to a session, what its
prompt says, whether its answer and its work are taken and what they make of the job; this
does the rest in the merge queue's own slot: the job's files merged onto the head with the
conflicts marked, committed where no ref points, checked out, the agent run there (sandboxed
as any agent), its output read and its checkout listed under the import rules. The guard then
runs on the result as on any merge (parallel_jobs, docs/parallel.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from string import Template

import attrs

from runner_core.changes.import_rules import Change, ImportDecision, decide_import, import_limits
from runner_core.history.records import TokenUsage
from runner_core.iteration.effects import AgentFinished, NotStarted, RunAgent
from runner_core.iteration.events import origin
from runner_core.iteration.machine import IterationMachine
from runner_core.loop.events import Event, agent_finished, agent_started
from runner_core.parallel.merge_session import (
    MERGER,
    MERGER_LOG,
    MERGER_OUTPUT,
    MERGER_OUTPUT_SCHEMA_FILE,
    MERGER_PROMPT,
    MarkedFile,
    SessionEnd,
    may_offer,
    offered,
    read_answer,
    resolution_problem,
    resolved_changes,
    session_prompt,
)
from runner_core.run.role_agents import iteration_config
from runner_core.tree.model import AgentRole
from runner_core.validation.schema import schema_text
from runner_shell.git.merging import marked_conflicts, merged_commit, stored_blob
from runner_shell.loop.night_loop import LoopRun
from runner_shell.sandbox.seen_at import ITERATION
from runner_shell.scratch.listing import list_scratch
from runner_shell.scratch.sandbox import Sandbox, runs_confined
from runner_shell.scratch.slots import prepare_slot, slot_sandbox
from runner_shell.step.agent_and_guard import AGENT_DIR, ProcessAgentRunner
from runner_shell.step.lock_and_journal import job_journal_path
from runner_shell.store.files import atomic_write_text, make_directory, read_bytes_capped
from runner_shell.store.iteration_log import utc_now

Emit = Callable[[Iterable[Event]], None]

TEMPLATE = Path(__file__).parent.parent / "step" / "templates" / "merger.md"
SCHEMA_DIR = "merger_schema"


@attrs.frozen(slots=True)
class SessionResult:
    """How a session ended; on `resolved`, the job's changes with its files joined."""

    end: SessionEnd
    reason: str = ""
    changes: tuple[Change, ...] = ()
    tokens: TokenUsage | None = None  # what its agent reported spending
    cost_usd: float | None = None


@attrs.frozen(slots=True)
class SessionPlace:
    """Where a session runs: the merge queue's slot and sandbox, the job's iteration dir."""

    number: int
    sandbox: Sandbox | None
    iter_dir: Path
    emit: Emit  # the job's events: the session's agent_started (role merger) and finished
    backend: str | None = None  # the backend the job's agent ran, when the loop chose one


def try_session(
    run: LoopRun,
    place: SessionPlace,
    machine: IterationMachine,
    onto: tuple[str, str],
    joined: Sequence[Change],
    conflicts: Sequence[str],
) -> SessionResult | None:
    """The session for the job's `conflicts` (`onto`: its start commit and the head; `joined`:
    its other changes, merged), or None when they are not offered to one."""
    facts = machine.facts
    if not may_offer(facts.config.parallel_merge_sessions, conflicts):
        return None  # nothing to mark
    imported = machine.imported or ImportDecision()
    files = marked_conflicts(run.repo, onto[0], onto[1], imported.changes, conflicts)
    if not offered(facts.config.parallel_merge_sessions, conflicts, files):
        return None
    return _run_session(run, place, machine, onto[1], joined, files)


def _run_session(
    run: LoopRun,
    place: SessionPlace,
    machine: IterationMachine,
    head: str,
    joined: Sequence[Change],
    files: Sequence[MarkedFile],
) -> SessionResult:
    facts, repo = machine.facts, run.repo
    marked = [Change(f.path, f.mode, stored_blob(repo, f.marked)) for f in files]
    start = tuple(sorted([*joined, *marked], key=lambda change: change.path))
    message = f"runner: merge session of iteration {facts.plan.iteration}"
    commit = merged_commit(repo, head, start, message)
    setup, inputs = facts.config.sandbox.setup, facts.config.sandbox.setup_inputs
    slot = prepare_slot(repo, commit, setup, place.number, place.sandbox, inputs)
    finished = _agent(run, place, machine, slot, files)
    if isinstance(finished, NotStarted):
        return SessionResult(SessionEnd.GAVE_UP, f"its agent did not start: {finished.message}")
    if finished.output_text is not None:
        atomic_write_text(place.iter_dir / MERGER_OUTPUT, finished.output_text)
    end, reason, changes = _judged(run, machine, slot, commit, joined, files, finished)
    return SessionResult(end, reason, changes, finished.tokens, finished.cost_usd)


def _judged(
    run: LoopRun,
    machine: IterationMachine,
    slot: Path,
    commit: str,
    joined: Sequence[Change],
    files: Sequence[MarkedFile],
    finished: AgentFinished,
) -> tuple[SessionEnd, str, tuple[Change, ...]]:
    """How the session ended, by its answer and by what it left in `slot` (started at
    `commit`), listed under the import rules; on `resolved`, the job's changes joined."""
    answer = read_answer(finished.output_text)
    if isinstance(answer, str):
        return SessionEnd.GAVE_UP, answer, ()
    if not answer.resolved:
        return SessionEnd.GAVE_UP, answer.summary or "no reason given", ()
    limits = import_limits(machine.facts.config)
    decision = decide_import(list_scratch(run.repo, slot, commit, limits), limits)
    written = {c.path: _read(slot / c.path) for c in decision.changes if c.oid is not None}
    problem = resolution_problem(decision, files, written)
    if problem is not None:
        return SessionEnd.REJECTED, problem, ()
    return SessionEnd.RESOLVED, answer.summary, resolved_changes(joined, files, decision)


def _agent(
    run: LoopRun,
    place: SessionPlace,
    machine: IterationMachine,
    slot: Path,
    files: Sequence[MarkedFile],
) -> AgentFinished | NotStarted:
    """The session's agent run in `slot`: the executor's agent settings (on the backend the
    job's agent ran), its own prompt, schema, output and log in the job's iteration
    directory, its start and end told in the job's events."""
    facts = machine.facts
    config = iteration_config(facts.config, AgentRole.EXECUTOR.value, place.backend)
    # In a directory of its own: a sandboxed agent sees its schema's directory read-only, and
    # no more of the iteration directory than its own (writable) agent directory.
    make_directory(place.iter_dir / SCHEMA_DIR)
    schema = place.iter_dir / SCHEMA_DIR / MERGER_OUTPUT_SCHEMA_FILE
    atomic_write_text(schema, schema_text(MERGER_OUTPUT_SCHEMA_FILE))
    # The output file where the agent sees it: a sandboxed one sees its directory at /iteration.
    output_dir = ITERATION if runs_confined(place.sandbox) else place.iter_dir / AGENT_DIR
    paths = {
        "output_path": str(output_dir / MERGER_OUTPUT),
        "schema_path": str(schema),
    }
    template = Template(TEMPLATE.read_text(encoding="utf-8")).safe_substitute(paths)
    summary = "" if machine.review is None else machine.review.summary
    prompt = session_prompt(template, facts.node, files, summary)
    atomic_write_text(place.iter_dir / MERGER_PROMPT, prompt)
    runner = ProcessAgentRunner(
        run.paths,
        run.repo,
        config,
        place.iter_dir,
        work_dir=slot,
        sandbox=place.sandbox,
        journal_file=job_journal_path(run.repo, facts.plan.iteration),
        schema=schema,
    )
    started = time.monotonic()
    place.emit((agent_started(origin(facts, utc_now()), MERGER, config.agent_backend),))
    finished = runner.run_agent(_effect(machine), machine.journal)
    code = finished.exit_code if isinstance(finished, AgentFinished) else None
    took = max(int((time.monotonic() - started) * 1000), 0)
    place.emit((agent_finished(origin(facts, utc_now()), code, took),))
    return finished


def _effect(machine: IterationMachine) -> RunAgent:
    """The session's agent run: the executor's contract, told its role is `merger`, with the
    iteration's whole timeout and its own prompt, output, usage and log files."""
    facts = machine.facts
    return RunAgent(
        role=AgentRole.EXECUTOR,
        env=(
            ("RUNNER_ROLE", MERGER),
            ("RUNNER_RUN_ID", facts.run_id),
            ("RUNNER_ITER", str(facts.plan.iteration)),
            ("RUNNER_NODE_ID", facts.node.id),
        ),
        timeout_secs=float(facts.config.iteration_timeout_secs),
        limit_bytes=facts.config.executor_output_limit_bytes,
        prompt_name=MERGER_PROMPT,
        output_name=MERGER_OUTPUT,
        usage_name="merger_usage.json",
        log_name=MERGER_LOG,
    )


def _read(path: Path) -> bytes:
    """A file the session changed, as it left it (b"" when it cannot be read: then a marker
    check finds none, and the import rules have refused what is not a regular file)."""
    try:
        return read_bytes_capped(path, 64 * 1024 * 1024)
    except OSError:
        return b""


def session_place(
    run: LoopRun,
    slots: int,
    machine: IterationMachine,
    job: tuple[Sandbox | None, Emit, str | None],
) -> SessionPlace:
    """The merge queue's slot (one past the jobs' own, `slots`) and the job's iteration
    directory; `job`: the job's sandbox, its events and the backend its agent ran."""
    facts = machine.facts
    iter_dir = run.paths.iter_dir(facts.run_id, facts.plan.iteration)
    sandbox, emit, backend = job
    return SessionPlace(slots, slot_sandbox(sandbox, slots), iter_dir, emit, backend)
