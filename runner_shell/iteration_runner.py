"""`runner step`: one iteration carried out — gather, call the core, run processes, write, commit.

Every decision (may the step run, which node, what the agent's work amounts to, the next tree,
the carried summary, the commit subject) is a runner_core call; this module only reads files,
starts the agent and guard with a shared deadline, writes the iteration log atomically in
SPEC §6's order and commits.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from string import Template

import attrs

from runner_core import (
    AgentOutputError,
    AgentRole,
    Config,
    GuardOutcome,
    IterationOutcome,
    Node,
    PlanKind,
    Review,
    RunState,
    StepPlan,
    build_prompt_pack,
    conclude,
    conclude_runner_error,
    context_files,
    needs_failure_log,
    plan_step,
    review_decomposition,
    review_execution,
    selected_section,
    tree_outline,
)
from runner_core.history import TokenUsage
from runner_core.iteration import agent_process_problem, guard_outcome, parse_agent_output
from runner_core.preconditions import RepoFacts, step_precondition_problem
from runner_core.recovery import Journal, interrupted_problem
from runner_shell.agents import AgentRequest, backend_for
from runner_shell.checks import check_programs, check_tree_writable
from runner_shell.errors import UserFacingError
from runner_shell.files import atomic_write_bytes, atomic_write_text, read_text_head
from runner_shell.git import Repo
from runner_shell.iteration_log import (
    PENDING_GUARD_LOG,
    IterationFacts,
    monotonic_ms,
    record_iteration,
    utc_now,
)
from runner_shell.layout import RunnerPaths
from runner_shell.lock_and_journal import current_command, read_journal, write_journal
from runner_shell.processes import SpawnError, run_process
from runner_shell.store import (
    canonical_json,
    load_config,
    load_goal_id,
    load_run_state,
    load_tree,
    read_gitignore_lines,
    read_goal,
    read_optional_text,
    read_tree_bytes,
)

EXIT_OK, EXIT_ERROR, EXIT_COMPLETE, EXIT_STUCK = 0, 1, 2, 3
# How much of the previous guard.log is handed to the next attempt as failure.md.
FAILURE_LOG_MAX_BYTES = 1024 * 1024


class RunnerFailure(Exception):
    """A runner error inside an iteration: logged and committed, then reported (exit 1)."""


@attrs.frozen(slots=True)
class StepResult:
    kind: PlanKind
    run_id: str
    plan: StepPlan
    outcome: IterationOutcome | None = None

    @property
    def exit_code(self) -> int:
        if self.kind is PlanKind.COMPLETE:
            return EXIT_COMPLETE
        if self.kind is PlanKind.STUCK:
            return EXIT_STUCK
        if self.kind is PlanKind.LIMIT:
            return EXIT_ERROR
        assert self.outcome is not None
        return EXIT_ERROR if self.outcome.runner_error is not None else EXIT_OK


def _template(name: str) -> Template:
    text = (Path(__file__).parent / "templates" / name).read_text(encoding="utf-8")
    return Template(text)


@attrs.frozen(slots=True)
class Loaded:
    """What a step reads before it decides anything."""

    config: Config
    state: RunState
    tree: Node
    run_id: str


def load_for_step(paths: RunnerPaths, repo: Repo) -> Loaded:
    """Check SPEC §5's preconditions and load config, run state and tree."""
    journal = read_journal(repo)
    if journal is not None:
        raise UserFacingError(interrupted_problem(journal))
    operation = repo.operation_in_progress()
    if operation is not None:
        raise UserFacingError(f"git is in the middle of {operation}; finish or abort it first")
    config = load_config(paths)
    state = load_run_state(paths)
    facts = RepoFacts(
        branch=repo.current_branch(),
        dirty_paths=repo.dirty_paths(),
        gitignore_lines=read_gitignore_lines(paths),
        run_id=state.run_id,
        goal_id=load_goal_id(paths),
    )
    problem = step_precondition_problem(facts)
    if problem is not None:
        raise UserFacingError(problem)
    assert state.run_id is not None
    return Loaded(config, state, load_tree(paths), state.run_id)


def run_step(paths: RunnerPaths, repo: Repo, prompt_budget: int) -> StepResult:
    loaded = load_for_step(paths, repo)
    plan = plan_step(loaded.tree, loaded.state, loaded.config.max_iterations)
    if plan.kind is not PlanKind.RUN:
        return StepResult(plan.kind, loaded.run_id, plan)
    # Problems a user can fix are refused here, before an iteration exists: nothing is written.
    check_programs(loaded.config, paths.root)
    check_tree_writable(paths, loaded.tree)
    outcome = Iteration(paths, repo, loaded, plan, prompt_budget).run()
    return StepResult(PlanKind.RUN, loaded.run_id, plan, outcome)


class Iteration:
    """One running iteration: its files, its deadline and its processes."""

    def __init__(
        self, paths: RunnerPaths, repo: Repo, loaded: Loaded, plan: StepPlan, prompt_budget: int
    ) -> None:
        self.paths = paths
        self.repo = repo
        self.loaded = loaded
        self.plan = plan
        self.prompt_budget = prompt_budget
        self.node = plan.node
        self.role = plan.role or AgentRole.EXECUTOR
        self.iter_dir = paths.iter_dir(loaded.run_id, plan.iteration)
        self.started_at = utc_now()
        self.journal: Journal
        self.started = time.monotonic()
        self.deadline = self.started + loaded.config.iteration_timeout_secs
        self.tokens: TokenUsage | None = None
        self.cost_usd: float | None = None
        self.context: dict[str, str] = {}

    # ------------------------------------------------------------ the flow

    def run(self) -> IterationOutcome:
        config_bytes = self.paths.config.read_bytes()
        self._prepare_iter_dir()
        self.journal = Journal(
            run_id=self.loaded.run_id,
            iteration=self.plan.iteration,
            node_id=self.node.id,
            role=self.role.value,
            phase="running",
            started_at=self.started_at,
            runner_pid=os.getpid(),
            command=current_command(),
        )
        # Durable before the agent starts: a kill from here on is found by 'runner recover'.
        write_journal(self.repo, self.journal)
        try:
            review = self._run_agent()
            guard = self._run_guard() if review.needs_guard else GuardOutcome.SKIPPED
            outcome = conclude(self.loaded.tree, self.node.id, review, guard)
        except (SpawnError, AgentOutputError, RunnerFailure, OSError) as error:
            outcome = conclude_runner_error(self.loaded.tree, _one_line(error))
        try:
            config_kept = self.paths.config.read_bytes() == config_bytes
        except OSError:  # deleted or replaced by the agent
            config_kept = False
        if not config_kept:
            # config.toml belongs to the user and the runner, never to the agent.
            atomic_write_bytes(self.paths.config, config_bytes)
        facts = IterationFacts(
            run_id=self.loaded.run_id,
            iteration=self.plan.iteration,
            node=self.node,
            role=self.role,
            prev_tree=self.loaded.tree,
            prev_state=self.loaded.state,
            started_at=self.started_at,
            ended_at=utc_now(),
            duration_ms=monotonic_ms(self.started),
            backend=self.loaded.config.agent_backend,
            tokens=self.tokens,
            cost_usd=self.cost_usd,
        )
        record_iteration(self.paths, self.repo, facts, outcome, self.journal)
        return outcome

    def _track_process_group(self, pgid: int) -> None:
        self.journal = attrs.evolve(
            self.journal, process_groups=(*self.journal.process_groups, pgid)
        )
        write_journal(self.repo, self.journal)

    def _remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def _prepare_iter_dir(self) -> None:
        if self.iter_dir.exists():
            # A directory left by an interrupted iteration is kept for inspection, not reused.
            n = 1
            while (
                aside := self.iter_dir.with_name(f"{self.iter_dir.name}.interrupted-{n}")
            ).exists():
                n += 1
            self.iter_dir.rename(aside)
        self.iter_dir.mkdir(parents=True)
        state = self.loaded.state
        failure_log = None
        if needs_failure_log(state):
            previous = (
                self.paths.iter_dir(self.loaded.run_id, self.plan.iteration - 1) / "guard.log"
            )
            if previous.exists():
                failure_log = read_text_head(previous, FAILURE_LOG_MAX_BYTES)
        files = context_files(read_goal(self.paths), state, failure_log)
        self.paths.context_dir.mkdir(parents=True, exist_ok=True)
        for name in ("goal.md", "history.md", "failure.md"):
            target = self.paths.context_dir / name
            if name in files:
                atomic_write_text(target, files[name])
            else:
                target.unlink(missing_ok=True)
        self.context = files

    def _prompt(self, schema_path: Path, output_path: Path) -> str:
        config = self.loaded.config
        values = {
            "context_dir": self.paths.relative(self.paths.context_dir) + "/",
            "guard_command": " ".join(config.guard_command),
            "output_path": str(output_path),
            "schema_path": str(schema_path),
        }
        role = self.role.value
        sections = {
            "contract": _template(f"contract_{role}.md").safe_substitute(values),
            "goal": self.context["goal.md"],
            "history": self.context.get("history.md"),
            "failure": self.context.get("failure.md"),
            "selected": selected_section(self.node, self.plan.selection.path or self.node.id),
            "tree": tree_outline(self.loaded.tree, self.node.id),
            "assumptions": read_optional_text(self.paths.assumptions, self.prompt_budget),
            "questions": read_optional_text(self.paths.questions, self.prompt_budget),
            "output": _template(f"output_{role}.md").safe_substitute(values),
        }
        return build_prompt_pack(sections, self.prompt_budget).text

    def _agent_env(self, output_path: Path, schema_path: Path, usage_path: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            RUNNER_ROLE=self.role.value,
            RUNNER_OUTPUT_PATH=str(output_path),
            RUNNER_OUTPUT_SCHEMA=str(schema_path),
            RUNNER_RUN_ID=self.loaded.run_id,
            RUNNER_ITER=str(self.plan.iteration),
            RUNNER_NODE_ID=self.node.id,
            RUNNER_ITER_DIR=str(self.iter_dir),
            RUNNER_USAGE_PATH=str(usage_path),
        )
        return env

    def _run_agent(self) -> Review:
        decomposing = self.role is AgentRole.DECOMPOSER
        schema_path = self.paths.decomposer_schema if decomposing else self.paths.executor_schema
        output_path = self.iter_dir / "agent_output.json"
        usage_path = self.iter_dir / "usage.json"
        prompt_path = self.iter_dir / "prompt.md"
        atomic_write_text(prompt_path, self._prompt(schema_path, output_path))
        config = self.loaded.config
        request = AgentRequest(
            role=self.role,
            repo_root=self.paths.root,
            iter_dir=self.iter_dir,
            prompt_path=prompt_path,
            output_path=output_path,
            schema_path=schema_path,
            usage_path=usage_path,
            log_path=self.iter_dir / ("planner_executor.log" if decomposing else "executor.log"),
            env=self._agent_env(output_path, schema_path, usage_path),
            timeout_secs=self._remaining(),
            limit_bytes=config.executor_output_limit_bytes,
            on_start=self._track_process_group,
        )
        agent = backend_for(config.agent_backend, config.agent_command).run(request)
        self._keep_usage(agent.input_tokens, agent.output_tokens, agent.cached_input_tokens)
        self.cost_usd = agent.cost_usd
        problem = agent_process_problem(
            # The configured budget, not what was left of it: that is the number a user can set.
            self.role,
            agent.process.exit_code,
            agent.process.timed_out,
            config.iteration_timeout_secs,
        )
        if problem is not None:
            raise RunnerFailure(problem)
        output = parse_agent_output(self.role, agent.output_text, agent.output_problem)
        if decomposing:
            atomic_write_text(self.iter_dir / "planner_output.json", canonical_json(output))
            return review_decomposition(
                self.loaded.tree, self.node.id, output, config.max_attempts_default
            )
        try:
            tree_text, unreadable = read_tree_bytes(self.paths), None
        except UserFacingError as error:  # the agent deleted it, or grew it past the limit
            tree_text, unreadable = b"", str(error)
        return review_execution(self.loaded.tree, self.node.id, output, tree_text, unreadable)

    def _keep_usage(self, input_: int | None, output: int | None, cached: int | None) -> None:
        if input_ is None and output is None and cached is None:
            return
        self.tokens = TokenUsage(input_ or 0, output or 0, cached or 0)

    def _run_guard(self) -> GuardOutcome:
        config = self.loaded.config
        # Written under a temporary name: SPEC §6 puts guard.log after meta and output.
        log_path = self.iter_dir / PENDING_GUARD_LOG
        remaining = self._remaining()
        if remaining <= 0:
            atomic_write_text(log_path, "=== stdout ===\n=== stderr ===\nguard timed out\n")
            return GuardOutcome.FAIL
        result = run_process(
            config.guard_command,
            cwd=self.paths.root,
            # Marks the guard and whatever it leaves running as this iteration's, for recovery.
            env=dict(os.environ, RUNNER_ITER_DIR=str(self.iter_dir)),
            stdin_path=None,
            timeout_secs=remaining,
            log_path=log_path,
            limit_bytes=config.guard_output_limit_bytes,
            on_start=self._track_process_group,
        )
        if result.timed_out:
            text = log_path.read_text(encoding="utf-8", errors="replace")
            atomic_write_text(log_path, text + f"guard timed out after {remaining:.1f} s\n")
        return guard_outcome(result.exit_code, result.timed_out)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def loop_line(result: StepResult) -> str:
    outcome = result.outcome
    assert outcome is not None
    return (
        f"loop: step run={result.run_id} iter={result.plan.iteration} node={result.plan.node.id} "
        f"status={outcome.status.value} guard={outcome.guard.value}"
    )


def _show_progress(paths: RunnerPaths, progress: Callable[[str], None], began: float) -> None:
    # Imported here: only `runner loop` shows progress, and `runner step` starts faster without.
    from runner_core.reports import progress_line

    try:
        state, config, tree = load_run_state(paths), load_config(paths), load_tree(paths)
    except UserFacingError:
        return  # the step itself reports what is wrong
    line = progress_line(state.next_iter, config.max_iterations, tree, time.monotonic() - began)
    if line is not None:
        progress(line)


def run_loop(
    paths: RunnerPaths,
    repo: Repo,
    prompt_budget: int,
    emit: Callable[[str], None],
    progress: Callable[[str], None] | None = None,
) -> int:
    """Step until complete (0), stuck (3), the iteration limit (1) or a runner error (1).

    `progress`, when given, hears a one-line summary before each step (a terminal's live line).
    """
    started_at = load_run_state(paths).next_iter
    began = time.monotonic()
    steps = 0
    while True:
        if progress is not None:
            _show_progress(paths, progress, began)
        result = run_step(paths, repo, prompt_budget)
        run = result.run_id
        if result.kind is PlanKind.COMPLETE:
            emit(f"loop: status=complete run={run} steps={steps} started_at_iter={started_at}")
            return EXIT_OK
        if result.kind is PlanKind.STUCK:
            node = result.plan.node
            emit(
                f"loop: status=stuck run={run} id={node.id} path={result.plan.selection.path} "
                f"attempts={node.attempts}/{node.max_attempts}"
            )
            return EXIT_STUCK
        if result.kind is PlanKind.LIMIT:
            emit(
                f"loop: status=limit run={run} next_iter={result.plan.iteration} "
                f"max_iterations={load_config(paths).max_iterations} steps={steps} "
                f"started_at_iter={started_at}"
            )
            return EXIT_ERROR
        steps += 1
        emit(loop_line(result))
        assert result.outcome is not None
        if result.outcome.runner_error is not None:
            raise UserFacingError(f"runner error: {result.outcome.runner_error}")
