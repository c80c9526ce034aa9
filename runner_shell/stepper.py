"""`runner step`: one iteration carried out — gather, call the core, run processes, write, commit.

Every decision (may the step run, which node, what the agent's work amounts to, the next tree,
the carried summary, the commit subject) is a runner_core call; this module only reads files,
starts the agent and guard with a shared deadline, writes the iteration log atomically in
SPEC §6's order and commits.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from string import Template
from typing import Any

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
    advance_run_state,
    build_prompt_pack,
    commit_message,
    conclude,
    conclude_runner_error,
    context_files,
    dumps_tree,
    iter_preorder,
    needs_failure_log,
    plan_step,
    review_decomposition,
    review_execution,
    selected_section,
    tree_outline,
)
from runner_core.preconditions import RepoFacts, step_precondition_problem
from runner_core.step import agent_process_problem, guard_outcome, parse_agent_output
from runner_shell.agents import AgentRequest, backend_for
from runner_shell.errors import UserFacingError
from runner_shell.files import atomic_write_text, read_text_head
from runner_shell.git import GitError, Repo
from runner_shell.layout import RunnerPaths
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
    write_run_state,
    write_tree,
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


def utc_now() -> str:
    moment = datetime.datetime.now(datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        self.started = time.monotonic()
        self.deadline = self.started + loaded.config.iteration_timeout_secs
        self.tokens: dict[str, int] | None = None
        self.cost_usd: float | None = None
        self.guard_log_ready: Path | None = None
        self.output_record: dict[str, Any] | None = None

    # ------------------------------------------------------------ the flow

    def run(self) -> IterationOutcome:
        config_bytes = self.paths.config.read_bytes()
        self._prepare_iter_dir()
        try:
            review = self._run_agent()
            guard = self._run_guard() if review.needs_guard else GuardOutcome.SKIPPED
            outcome = conclude(self.loaded.tree, self.node.id, review, guard)
        except (SpawnError, AgentOutputError, RunnerFailure, OSError) as error:
            outcome = conclude_runner_error(self.loaded.tree, _one_line(error))
        self._finish(outcome, config_bytes)
        return outcome

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
        )
        agent = backend_for(config.agent_backend, config.agent_command).run(request)
        self._keep_usage(agent.input_tokens, agent.output_tokens, agent.cached_input_tokens)
        self.cost_usd = agent.cost_usd
        problem = agent_process_problem(
            self.role, agent.process.exit_code, agent.process.timed_out, request.timeout_secs
        )
        if problem is not None:
            raise RunnerFailure(problem)
        output = parse_agent_output(self.role, agent.output_text, agent.output_problem)
        if decomposing:
            atomic_write_text(self.iter_dir / "planner_output.json", canonical_json(output))
            return review_decomposition(
                self.loaded.tree, self.node.id, output, config.max_attempts_default
            )
        return review_execution(self.loaded.tree, self.node.id, output, read_tree_bytes(self.paths))

    def _keep_usage(self, input_: int | None, output: int | None, cached: int | None) -> None:
        if input_ is None and output is None and cached is None:
            return
        self.tokens = {"input": input_ or 0, "output": output or 0, "cached": cached or 0}

    def _run_guard(self) -> GuardOutcome:
        config = self.loaded.config
        # Written under a temporary name: SPEC §6 puts guard.log after meta and output.
        log_path = self.iter_dir / ".guard.log.pending"
        remaining = self._remaining()
        if remaining <= 0:
            atomic_write_text(log_path, "=== stdout ===\n=== stderr ===\nguard timed out\n")
            self.guard_log_ready = log_path
            return GuardOutcome.FAIL
        result = run_process(
            config.guard_command,
            cwd=self.paths.root,
            env=dict(os.environ),
            stdin_path=None,
            timeout_secs=remaining,
            log_path=log_path,
            limit_bytes=config.guard_output_limit_bytes,
        )
        if result.timed_out:
            text = log_path.read_text(encoding="utf-8", errors="replace")
            atomic_write_text(log_path, text + f"guard timed out after {remaining:.1f} s\n")
        self.guard_log_ready = log_path
        return guard_outcome(result.exit_code, result.timed_out)

    # ------------------------------------------------------------ writing it down

    def _finish(self, outcome: IterationOutcome, config_bytes: bytes) -> None:
        paths = self.paths
        if paths.config.read_bytes() != config_bytes:
            # config.toml is the user's and the runner's, never the agent's.
            paths.config.write_bytes(config_bytes)
        write_tree(paths, outcome.tree)
        ended_at = utc_now()
        duration_ms = int((time.monotonic() - self.started) * 1000)
        before = self.node
        after = _find(outcome.tree, self.node.id)
        meta = {
            "run_id": self.loaded.run_id,
            "iter": self.plan.iteration,
            "node_id": self.node.id,
            "role": self.role.value,
            "status": outcome.status.value,
            "guard": outcome.guard.value,
            "execution": _execution_number(
                paths, self.loaded.run_id, self.node.id, self.plan.iteration
            ),
            "started_at": self.started_at,
            "ended_at": ended_at,
            "duration_ms": duration_ms,
            "error_kind": outcome.error_kind,
            "error": outcome.runner_error or outcome.agent_error,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "attempts_before": before.attempts,
            "attempts_after": after.attempts if after is not None else before.attempts,
            "backend": self.loaded.config.agent_backend,
        }
        atomic_write_text(self.iter_dir / "meta.json", canonical_json(meta))
        output = {"status": outcome.status.value, "summary": outcome.summary}
        atomic_write_text(self.iter_dir / "output.json", canonical_json(output))
        if self.guard_log_ready is not None:
            os.replace(self.guard_log_ready, self.iter_dir / "guard.log")
        if outcome.agent_error is not None:
            atomic_write_text(
                self.iter_dir / "agent_error.log", f"agent error: {outcome.agent_error}\n"
            )
        if outcome.runner_error is not None:
            atomic_write_text(
                self.iter_dir / "runner_error.log", f"runner error: {outcome.runner_error}\n"
            )
        atomic_write_text(self.iter_dir / "tree.before.json", dumps_tree(self.loaded.tree))
        atomic_write_text(self.iter_dir / "tree.after.json", dumps_tree(outcome.tree))
        write_run_state(paths, advance_run_state(self.loaded.state, outcome))
        message = commit_message(self.loaded.run_id, self.plan.iteration, self.node.id, outcome)
        try:
            self.repo.commit_all(message)
        except GitError as error:
            raise UserFacingError(
                f"iteration {self.plan.iteration} was logged but not committed: {error}"
            ) from None


def _find(tree: Node, node_id: str) -> Node | None:
    return next((node for node, _ in iter_preorder(tree) if node.id == node_id), None)


def _execution_number(paths: RunnerPaths, run_id: str, node_id: str, iteration: int) -> int:
    """1 + how many earlier iterations of this run executed the node (from their meta.json)."""
    count = 0
    run_dir = paths.run_dir(run_id)
    for entry in run_dir.iterdir() if run_dir.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) >= iteration:
            continue
        try:
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("node_id") == node_id:
            count += 1
    return count + 1


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


def run_loop(
    paths: RunnerPaths, repo: Repo, prompt_budget: int, emit: Callable[[str], None]
) -> int:
    """Step until complete (0), stuck (3), the iteration limit (1) or a runner error (1)."""
    started_at = load_run_state(paths).next_iter
    steps = 0
    while True:
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
