"""The ports that run an iteration's processes: the agent, through its backend, and the guard.

Each starts its process in the run's checkout or the scratch checkout (confined when a sandbox
is set), writes the journal the moment a process group exists so that `runner recover` can end
it, and answers the core's result. Never decides what a finish means: the machine does.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import attrs

from runner_core.history.records import TokenUsage
from runner_core.iteration.effects import (
    AgentFinished,
    GuardFinished,
    NotStarted,
    RunAgent,
    RunGuard,
)
from runner_core.iteration.guard_stage import JUDGE_REPORT, GuardRun
from runner_core.iteration.recovery import Journal
from runner_core.run.config import Config
from runner_core.run.environment import agent_environment, guard_environment
from runner_core.tree.model import AgentRole
from runner_shell.agents.session import AgentRequest, backend_for
from runner_shell.git.repo import GitError, Repo
from runner_shell.guard.baselines import checkout_paths, discard_report, keep_baseline, take_report
from runner_shell.sandbox.processes import SpawnError, run_process
from runner_shell.scratch.sandbox import Sandbox, runs_confined
from runner_shell.scratch.setup_runs import SetupFailed, inputs_changed, set_up_again
from runner_shell.scratch.slots import SlotError, prepare_slot
from runner_shell.signals import Interrupted, interruptible
from runner_shell.step.lock_and_journal import write_journal
from runner_shell.step.output_events import LiveOutput
from runner_shell.store.files import atomic_write_bytes, make_directory, read_bytes_capped
from runner_shell.store.layout import Places
from runner_shell.store.removal import empty_directory

# RUNNER_WAIT_PATH: where a `command` agent asks the loop to wait out a limit.
WAIT_FILE = "wait.json"
# In the iteration directory: the agent's own directory (RUNNER_AGENT_DIR: its output, usage
# and wait files), and the guard's (its report). A sandboxed agent or guard can write there
# and nowhere else of the iteration directory, whose files are the runner's own.
AGENT_DIR = "agent"
GUARD_DIR = "guard"
# In the iteration directory: the output of `[sandbox] setup` run again before the guard.
SETUP_LOG = "setup.log"
# The agent's files the runner keeps in the iteration directory (archived with it), copied
# out of the agent's directory byte for byte once the session is over, each up to a cap.
_KEPT_AGENT_FILES = {"agent_output.json": 16 * 1024 * 1024, "usage.json": 64 * 1024}


def own_directory(iter_dir: Path, name: str) -> Path:
    """`name` (AGENT_DIR, GUARD_DIR) in the iteration directory, made empty: nothing an
    earlier process of the iteration left there counts."""
    directory = iter_dir / name
    make_directory(directory)  # never through a symlink
    empty_directory(directory)
    return directory


def _keep_agent_files(agent_dir: Path, iter_dir: Path) -> None:
    """The agent's output and usage files copied into the iteration directory under their
    names, as regular files the runner wrote; a symlink, FIFO or oversized file is left out."""
    for name, cap in _KEPT_AGENT_FILES.items():
        try:
            data = read_bytes_capped(agent_dir / name, cap)
        except OSError:
            continue
        atomic_write_bytes(iter_dir / name, data, durable=False)


def schema_path(paths: Places, role: AgentRole) -> Path:
    """The JSON Schema the role's final output must match (RUNNER_OUTPUT_SCHEMA)."""
    return paths.decomposer_schema if role is AgentRole.DECOMPOSER else paths.executor_schema


@attrs.frozen(slots=True)
class ProcessAgentRunner:
    """Runs the configured backend; records its process group in the journal as it starts."""

    paths: Places
    repo: Repo
    config: Config
    iter_dir: Path
    output: LiveOutput | None = None
    work_dir: Path | None = None  # where the agent works: the scratch checkout, or the root
    sandbox: Sandbox | None = None  # how its session is confined
    journal_file: Path | None = None  # a parallel job's journal, else the run's
    schema: Path | None = None  # the output's schema, when not the role's (a merge session's)

    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted:
        started: list[int] = []
        agent_dir = own_directory(self.iter_dir, AGENT_DIR)
        output_path, usage_path = agent_dir / effect.output_name, agent_dir / effect.usage_name
        schema = self.schema or schema_path(self.paths, effect.role)
        env = self._environment(effect, agent_dir, output_path, usage_path, schema)
        request = AgentRequest(
            role=effect.role,
            repo_root=self.work_dir or self.paths.root,
            iter_dir=self.iter_dir,
            prompt_path=self.iter_dir / effect.prompt_name,
            output_path=output_path,
            schema_path=schema,
            usage_path=usage_path,
            log_path=self.iter_dir / effect.log_name,
            env=env,
            timeout_secs=effect.timeout_secs,
            limit_bytes=effect.limit_bytes,
            on_start=_tracker(self.repo, journal, started, self.journal_file),
            wait_path=agent_dir / WAIT_FILE,
            on_output=None if self.output is None else self.output.start(effect.log_name),
            sandbox=self.sandbox,
            backend=self.config.agent_backend,
            allow_hosts=self.config.sandbox.allow_hosts,
            output_dir=agent_dir,
        )
        try:
            with interruptible():
                agent = backend_for(self.config.agent_backend, self.config.agent_command).run(
                    request
                )
        except SpawnError as error:
            return NotStarted(str(error))
        except Interrupted as signal_:
            group = started[0] if started else None
            return AgentFinished(None, False, None, None, None, None, group, None, signal_.name)
        finally:
            if self.output is not None:
                self.output.flush()
            _keep_agent_files(agent_dir, self.iter_dir)
        return AgentFinished(
            exit_code=agent.process.exit_code,
            timed_out=agent.process.timed_out,
            output_text=agent.output_text,
            output_problem=agent.output_problem,
            tokens=_tokens(agent.input_tokens, agent.output_tokens, agent.cached_input_tokens),
            cost_usd=agent.cost_usd,
            process_group=started[0] if started else None,
            limit=agent.limit,
            wait_problem=agent.wait_problem,
            output_planted=agent.output_text is None and _planted(request.output_path),
            sandbox_limit=agent.process.limit,
        )

    def _environment(
        self, effect: RunAgent, agent_dir: Path, output_path: Path, usage_path: Path, schema: Path
    ) -> dict[str, str]:
        """The session's environment: the allow-list, sandboxed or not
        (runner_core.run.environment; the sandbox narrows it again and adds the private HOME,
        Sandbox.session_env), and the RUNNER_* variables of the agent contract."""
        extra = () if self.sandbox is None else self.sandbox.agent_variables
        env = agent_environment(os.environ, self.config.agent_backend, extra)
        env.update(
            effect.env,
            RUNNER_OUTPUT_PATH=str(output_path),
            RUNNER_OUTPUT_SCHEMA=str(schema),
            RUNNER_ITER_DIR=str(self.iter_dir),
            RUNNER_USAGE_PATH=str(usage_path),
            RUNNER_WAIT_PATH=str(agent_dir / WAIT_FILE),
            RUNNER_AGENT_DIR=str(agent_dir),
        )
        return env


def _planted(path: Path) -> bool:
    """Whether something other than a regular file stands at `path` (never followed)."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _tracker(
    repo: Repo, journal: Journal, started: list[int], path: Path | None
) -> Callable[[int], None]:
    """Write the journal with the new process group the moment it exists, for recovery."""

    def track(pgid: int) -> None:
        started.append(pgid)
        groups = (*journal.process_groups, pgid)
        write_journal(repo, attrs.evolve(journal, process_groups=groups), path)

    return track


def _tokens(input_: int | None, output: int | None, cached: int | None) -> TokenUsage | None:
    if input_ is None and output is None and cached is None:
        return None
    return TokenUsage(input_ or 0, output or 0, cached or 0)


@attrs.frozen(slots=True)
class ProcessGuardRunner:
    root: Path
    repo: Repo
    iter_dir: Path
    output: LiveOutput | None = None
    network: bool = False  # `[guard] network`: a guard runs offline unless allowed
    sandbox: Sandbox | None = None  # how the guard is confined
    base: str | None = None  # the commit the scratch checkout is reset to after a baseline
    setup: tuple[str, ...] = ()  # the slot's `[sandbox] setup`, should the reset remake it
    slot_number: int = 0  # which slot `root` is, for that reset
    journal_file: Path | None = None  # a parallel job's journal, else the run's
    # The commit the checkout starts from when it is not `base` (a previous attempt's files
    # on it): a baseline is measured at `base`, then the checkout goes back to this.
    start: str | None = None
    setup_inputs: tuple[str, ...] = ()  # `[sandbox] setup_inputs`, for those resets too

    def run_guard(self, effect: RunGuard, journal: Journal) -> GuardFinished | NotStarted:
        report_path = own_directory(self.iter_dir, GUARD_DIR) / (effect.report_name or JUDGE_REPORT)
        discard_report(report_path)  # a stale or planted report never counts
        if effect.setup_inputs and inputs_changed(self.root, self.setup_inputs):
            unset = self._set_up_again()
            if unset is not None:
                return unset
        baseline = effect.purpose is GuardRun.BASELINE and self.base is not None
        if baseline and self.base is not None and self.start not in (None, self.base):
            self._reset(self.base)
        finished = self._run(effect, journal, report_path)
        confined = runs_confined(self.sandbox)
        report, problem = take_report(report_path, checkout_paths(self.root, confined))
        if baseline and self.base is not None:
            if report is not None:
                keep_baseline(self.repo, self.base, report)
            # What the guard left at the base is not the agent's to find.
            self._reset(self.start or self.base)
        if isinstance(finished, NotStarted) or effect.report_name is None:
            return finished
        return attrs.evolve(finished, report=report, report_problem=problem)

    def _reset(self, commit: str) -> None:
        try:
            number, sandbox, inputs = self.slot_number, self.sandbox, self.setup_inputs
            prepare_slot(self.repo, commit, self.setup, number, sandbox, inputs)
        except (SlotError, GitError) as error:
            raise OSError(f"the scratch checkout could not be reset: {error}") from None

    def _set_up_again(self) -> GuardFinished | None:
        """`[sandbox] setup` again on the agent's changed inputs, before its guard: the
        guard's finish when it failed (no guard runs then), else None."""
        log = self.iter_dir / SETUP_LOG
        try:
            with interruptible():
                set_up_again(self.root, self.setup, self.setup_inputs, self.sandbox, log)
        except SetupFailed as error:
            return GuardFinished(None, False, setup_failed=f"{error.how}; see {log}")
        except Interrupted as signal_:
            return GuardFinished(None, False, interrupted=signal_.name)
        except (SlotError, GitError) as error:
            raise OSError(f"[sandbox] setup could not run again: {error}") from None
        return None

    def _run(
        self, effect: RunGuard, journal: Journal, report_path: Path
    ) -> GuardFinished | NotStarted:
        started: list[int] = []
        # RUNNER_ITER_DIR marks the guard and what it leaves running as this iteration's.
        # No key and no token: only the allow-list and `[guard] env` (runner_core.run.environment).
        extra = () if self.sandbox is None else self.sandbox.guard_variables
        env = {
            **guard_environment(os.environ, extra),
            **dict(effect.env),
            "RUNNER_ITER_DIR": str(self.iter_dir),
            "RUNNER_GUARD_REPORT": str(report_path),
        }
        confinement = None
        if self.sandbox is not None:
            # What an earlier guard left in its HOME (a `.pth`, a plugin) never judges this one.
            empty_directory(self.sandbox.homes / "guard")
            env = self.sandbox.guard_env(env)
            confinement = self.sandbox.confine(
                effect.argv, self.root, report_path.parent, self.network, "guard"
            )
        argv = effect.argv
        try:
            with interruptible():
                result = run_process(
                    argv,
                    cwd=self.root,
                    env=env,
                    stdin_path=None,
                    timeout_secs=effect.timeout_secs,
                    log_path=self.iter_dir / effect.log_name,
                    limit_bytes=effect.limit_bytes,
                    on_start=_tracker(self.repo, journal, started, self.journal_file),
                    on_output=None if self.output is None else self.output.start("guard.log"),
                    confinement=confinement,
                )
        except SpawnError as error:
            return NotStarted(str(error))
        except Interrupted as signal_:
            return GuardFinished(None, False, started[0] if started else None, signal_.name)
        finally:
            if self.output is not None:
                self.output.flush()
        group = started[0] if started else None
        return GuardFinished(
            result.exit_code,
            result.timed_out,
            group,
            sandbox_limit=result.limit,
        )
