"""The whole iteration as a sans-I/O machine, driven with fakes: no subprocess.

Each test feeds the machine the results a shell would report — agent finished, guard finished,
a process that could not start, an I/O failure — and checks the effects it asks for and the
write-set it ends with. The last tests run the shell's own interpreter over fake ports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import pytest
from pyrsistent import pmap

from runner_core import GuardOutcome, Node, parse_config
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.history.records import ErrorKind, TokenUsage
from runner_core.iteration.effects import (
    Abort,
    AgentFinished,
    Carried,
    CarryWork,
    Commit,
    CommitFailed,
    CommitPart,
    ConfigRead,
    CountExecutions,
    Done,
    Effect,
    ExecutionsCounted,
    FileWrite,
    Finished,
    GuardFinished,
    HeadRead,
    IoFailed,
    NotStarted,
    Place,
    PrepareIterationDir,
    ReadConfig,
    ReadHead,
    ReadTree,
    RestoreConfig,
    Result,
    RunAgent,
    RunGuard,
    TreeRead,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.events import after_result
from runner_core.iteration.facts import (
    ERROR_KIND,
    ClockReading,
    Failure,
    IterationFacts,
    PromptParts,
    Stage,
)
from runner_core.iteration.machine import (
    IterationMachine,
    set_aside_name,
    start_iteration,
)
from runner_core.iteration.plan import RunPlan, plan_step
from runner_core.iteration.ports import IterationPorts
from runner_core.iteration.recovery import PENDING_GUARD_LOG, Journal, JournalPhase
from runner_core.loop.events import Event
from runner_core.run.outside_change import BranchSeen, GitHead
from runner_core.run.sandbox_config import LimitHit
from runner_core.run.state import RunState
from runner_core.tree.serialization import dumps_tree
from runner_shell.step.runner import interpret
from tests.helpers.trees import node, text_of, tree

CONFIG_BYTES = b'[agent]\nbackend = "command"\ncommand = ["agent"]\n'
TIMEOUT = 100.0


def prev() -> Node:
    return tree("root", tree("done", passes=True, attempts=1, order=0), tree("leaf", order=1))


def decomposable() -> Node:
    return tree("root", tree("big", next="decompose"))


def facts(
    root: Node | None = None,
    state: RunState | None = None,
    entries: frozenset[str] = frozenset(),
    previous_sha256: str | None = None,
) -> IterationFacts:
    root = prev() if root is None else root
    state = RunState(run_id="run-1", next_iter=1) if state is None else state
    config = parse_config(
        {
            "agent": {"backend": "command", "command": ["agent"]},
            "guard": {"command": ["ci"]},
            "iteration_timeout_secs": int(TIMEOUT),
        }
    )
    plan = plan_step(root, state, config.max_iterations)
    assert isinstance(plan, RunPlan), plan
    return IterationFacts(
        run_id="run-1",
        plan=plan,
        config=config,
        state=state,
        tree=root,
        goal="---\nid: run-1\n---\n\n# Goal\n",
        failure_log=None,
        config_bytes=CONFIG_BYTES,
        entries=entries,
        previous_snapshot_sha256=previous_sha256,
        prompt=PromptParts("contract", "output", None, None, None, 100_000),
        started=at(0.0),
        runner_pid=42,
        command="runner step",
    )


def at(seconds: float) -> ClockReading:
    return ClockReading(1000.0 + seconds, f"2026-01-01T00:00:{seconds:06.3f}Z")


def agent_done(status: str = "done", summary: str = "did it") -> AgentFinished:
    output = json.dumps({"status": status, "summary": summary})
    return AgentFinished(0, False, output, None, TokenUsage(10, 5, 1), 0.5, process_group=77)


def edited_tree() -> bytes:
    """tree.json as an executor leaves it: the open leaf's title refined."""
    return text_of(
        node(
            "root",
            node("done", passes=True, attempts=1, order=0),
            node("leaf", order=1, title="refined"),
        )
    ).encode()


def drive(
    machine: IterationMachine, results: Mapping[type, Result], clock: float = 1.0
) -> tuple[list[Effect], IterationMachine]:
    """Feed `results[type(effect)]` (Done otherwise) until the machine finishes or aborts."""
    seen: list[Effect] = []
    while not isinstance(machine.effect, Finished | Abort):
        seen.append(machine.effect)
        machine = machine.feed(results.get(type(machine.effect), Done()), at(clock))
    seen.append(machine.effect)
    return seen, machine


def kinds(effects: list[Effect]) -> list[type]:
    return [type(effect) for effect in effects]


def outcome_of(effects: list[Effect]) -> Finished:
    finished = effects[-1]
    assert isinstance(finished, Finished)
    return finished


def commit_of(effects: list[Effect]) -> Commit:
    commit = next(effect for effect in effects if isinstance(effect, Commit))
    return commit


def file_data(commit: Commit, name: str) -> Any:
    found = next(f for f in commit.files if f.name == name)
    return json.loads(found.data)


EXECUTOR_RESULTS: dict[type, Result] = {
    RunAgent: agent_done(),
    ReadTree: TreeRead(edited_tree()),
    RunGuard: GuardFinished(0, False, process_group=78),
    ReadConfig: ConfigRead(CONFIG_BYTES),
}


# ---------------------------------------------------------------- the happy paths


def test_an_executor_iteration_asks_for_every_effect_in_order() -> None:
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS)

    assert kinds(effects) == [
        PrepareIterationDir,
        WriteContext,
        WriteJournal,
        WriteIterationFile,
        RunAgent,
        ReadTree,
        RunGuard,
        ReadConfig,
        Commit,
        Finished,
    ]
    finished = outcome_of(effects)
    assert (finished.outcome.status.value, finished.outcome.guard) == ("done", GuardOutcome.PASS)
    assert finished.record.execution == 1
    assert finished.record.tokens == TokenUsage(10, 5, 1)
    assert finished.record.duration_ms == 1000


def test_the_final_write_set_is_in_spec_order_and_counts_the_execution() -> None:
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS)
    commit = commit_of(effects)

    assert [f.name for f in commit.files] == [
        "tree.json",
        "meta.json",
        "output.json",
        "guard.log",
        "tree.before.json",
        "tree.after.json",
        "run_state.json",
    ]
    assert commit.files[3].rename_from == PENDING_GUARD_LOG
    assert file_data(commit, "output.json") == {"status": "done", "summary": "did it"}
    state = file_data(commit, "run_state.json")
    assert (state["next_iter"], state["executions"]) == (2, {"leaf": 1})
    assert commit.message.startswith(
        "chore(loop): run run-1 iter 1 node leaf status=done guard=pass\n\n"
    )
    assert commit.writing.phase is JournalPhase.WRITING
    assert commit.committing.phase is JournalPhase.COMMITTING
    assert commit.committing.commit_subject == commit.message.splitlines()[0]
    # The process groups the agent and guard ran in stay in the journal for recovery.
    assert commit.writing.process_groups == (77, 78)


def test_a_decomposer_iteration_writes_the_planner_output_and_skips_the_guard() -> None:
    output = json.dumps(
        {
            "summary": "split",
            "children": [{"title": "A", "goal": "a", "acceptance": [], "next": "execute"}],
        }
    )
    results: dict[type, Result] = {
        RunAgent: AgentFinished(0, False, output, None),
        ReadConfig: ConfigRead(CONFIG_BYTES),
    }
    effects, _ = drive(start_iteration(facts(decomposable())), results)

    assert RunGuard not in kinds(effects) and ReadTree not in kinds(effects)
    planner = next(
        e for e in effects if isinstance(e, WriteIterationFile) and e.name != "prompt.md"
    )
    assert planner.name == "planner_output.json"
    agent = next(e for e in effects if isinstance(e, RunAgent))
    assert agent.log_name == "planner_executor.log"
    finished = outcome_of(effects)
    assert finished.outcome.status.value == "decomposed"
    assert [child.id for child in finished.outcome.tree.children[0].children] == ["big.1"]


def test_context_holds_the_selected_node_then_the_project_goal() -> None:
    machine = start_iteration(facts()).feed(Done(), at(0))

    assert isinstance(machine.effect, WriteContext)
    files = dict(machine.effect.files)
    assert files["goal.md"].startswith("# Selected node leaf: title of leaf\n\ngoal of leaf\n")
    assert files["goal.md"].endswith("# Project goal\n\n# Goal\n")
    assert machine.effect.remove == ("history.md", "failure.md")


def test_the_agent_gets_what_is_left_of_the_deadline_and_its_env() -> None:
    machine = start_iteration(facts())
    for _ in range(4):
        machine = machine.feed(Done(), at(30.0))

    assert isinstance(machine.effect, RunAgent)
    assert machine.effect.timeout_secs == pytest.approx(TIMEOUT - 30.0)
    assert dict(machine.effect.env) == {
        "RUNNER_ROLE": "executor",
        "RUNNER_RUN_ID": "run-1",
        "RUNNER_ITER": "1",
        "RUNNER_NODE_ID": "leaf",
    }


def test_the_guard_gets_what_the_agent_left() -> None:
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS, clock=60.0)

    guard = next(e for e in effects if isinstance(e, RunGuard))
    assert guard.timeout_secs == pytest.approx(TIMEOUT - 60.0)
    assert guard.argv == ("ci",)


# ---------------------------------------------------------------- runner errors


RUNNER_ERRORS = [
    pytest.param(
        {RunAgent: NotStarted("cannot start 'agent': No such file or directory")},
        "cannot start 'agent': No such file or directory",
        id="agent not started",
    ),
    pytest.param(
        {RunAgent: AgentFinished(3, False, None, None)},
        "executor agent exited with status 3",
        id="agent exit status",
    ),
    pytest.param(
        {RunAgent: AgentFinished(-9, False, None, None)},
        "executor agent was killed by signal 9",
        id="agent killed",
    ),
    pytest.param(
        {RunAgent: AgentFinished(None, True, None, None)},
        "executor agent timed out after 100 s (iteration_timeout_secs)",
        id="agent timeout",
    ),
    pytest.param(
        {RunAgent: AgentFinished(0, False, None, "output file is missing")},
        "executor agent output unusable: output file is missing",
        id="no output",
    ),
    pytest.param(
        {RunAgent: AgentFinished(0, False, "not json", None)},
        "executor agent output is not JSON",
        id="output not JSON",
    ),
    pytest.param(
        {RunAgent: AgentFinished(0, False, '{"status": "maybe"}', None)},
        "executor output does not match its schema",
        id="output off schema",
    ),
    pytest.param(
        {
            RunAgent: agent_done(),
            ReadTree: TreeRead(edited_tree()),
            RunGuard: NotStarted("cannot start 'ci': not found"),
        },
        "cannot start 'ci': not found",
        id="guard not started",
    ),
    pytest.param(
        {WriteIterationFile: IoFailed("[Errno 28] No space left on device")},
        "[Errno 28] No space left on device",
        id="prompt not written",
    ),
    pytest.param(
        {RunAgent: agent_done(), ReadTree: IoFailed("[Errno 5] Input/output error")},
        "[Errno 5] Input/output error",
        id="tree not read",
    ),
]


@pytest.mark.parametrize(("results", "message"), RUNNER_ERRORS)
def test_runner_errors_keep_the_tree_and_every_attempt(
    results: dict[type, Result], message: str
) -> None:
    results = {ReadTree: TreeRead(edited_tree()), ReadConfig: ConfigRead(CONFIG_BYTES), **results}
    effects, machine = drive(start_iteration(facts()), results)

    assert machine.failure is not None and ERROR_KIND[machine.failure] is ErrorKind.RUNNER
    finished = outcome_of(effects)
    outcome = finished.outcome
    assert outcome.runner_error is not None and outcome.runner_error.startswith(message)
    assert outcome.tree == prev()  # the previous tree: nothing changed
    assert (outcome.status.value, outcome.guard) == ("retry", GuardOutcome.SKIPPED)
    assert finished.record.error_kind is ErrorKind.RUNNER
    assert finished.record.attempts_after == finished.record.attempts_before
    commit = commit_of(effects)
    assert "runner_error.log" in [f.name for f in commit.files]
    assert file_data(commit, "run_state.json")["last_summary"] == ""


def test_an_io_failure_before_the_agent_aborts_without_recording_anything() -> None:
    effects, _ = drive(start_iteration(facts()), {WriteContext: IoFailed("disk full")})

    assert kinds(effects) == [PrepareIterationDir, WriteContext, Abort]
    assert effects[-1] == Abort("disk full")


@pytest.mark.parametrize(
    ("failed", "message"),
    [
        (
            CommitFailed(CommitPart.COMMIT, "git commit failed: index.lock exists"),
            "iteration 1 was logged but not committed: git commit failed: index.lock exists "
            "(fix the problem, then run 'runner recover')",
        ),
        (
            CommitFailed(CommitPart.ARCHIVE, "git fast-import failed: refused"),
            "iteration 1 was committed but its logs were not archived: git fast-import failed: "
            "refused (fix the problem, then run 'runner recover')",
        ),
    ],
    ids=["commit", "archive"],
)
def test_a_commit_that_failed_after_its_files_aborts_with_the_way_back(
    failed: CommitFailed, message: str
) -> None:
    effects, machine = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, Commit: failed})

    assert kinds(effects)[-2:] == [Commit, Abort]
    assert effects[-1] == Abort(message)
    assert machine.stage is Stage.DONE


# ---------------------------------------------------------------- agent errors and guards


def test_a_tree_the_agent_deleted_is_an_agent_error_of_a_retry() -> None:
    results = {**EXECUTOR_RESULTS, ReadTree: TreeRead(b"", ".runner/state/tree.json is missing")}
    effects, machine = drive(start_iteration(facts()), results)

    assert machine.failure is Failure.TREE_REJECTED
    outcome = outcome_of(effects).outcome
    assert outcome.agent_error == "tree.json after the agent: .runner/state/tree.json is missing"
    assert (outcome.status.value, outcome.guard) == ("retry", GuardOutcome.SKIPPED)
    assert RunGuard not in kinds(effects)
    assert outcome_of(effects).record.error_kind is ErrorKind.AGENT
    assert "agent_error.log" in [f.name for f in commit_of(effects).files]


def test_an_invalid_tree_is_an_agent_error() -> None:
    results = {**EXECUTOR_RESULTS, ReadTree: TreeRead(b"{")}
    effects, _ = drive(start_iteration(facts()), results)

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error is not None
    assert outcome.agent_error.startswith("tree.json after the agent:")
    assert outcome.tree.children[1].attempts == 1  # the attempt is consumed


def test_a_failed_guard_costs_an_attempt() -> None:
    results = {**EXECUTOR_RESULTS, RunGuard: GuardFinished(1, False)}
    effects, _ = drive(start_iteration(facts()), results)

    outcome = outcome_of(effects).outcome
    assert outcome.guard is GuardOutcome.FAIL
    assert outcome.tree.children[1].attempts == 1


def test_a_guard_that_times_out_fails_and_its_log_says_so() -> None:
    results = {**EXECUTOR_RESULTS, RunGuard: GuardFinished(None, True)}
    effects, _ = drive(start_iteration(facts()), results, clock=40.0)

    note = effects[effects.index(next(e for e in effects if isinstance(e, RunGuard))) + 1]
    assert note == WriteIterationFile(PENDING_GUARD_LOG, "guard timed out after 60.0 s\n", True)
    assert outcome_of(effects).outcome.guard is GuardOutcome.FAIL


def test_a_guard_with_no_time_left_is_a_runner_error_without_running() -> None:
    # The agent ended in time: the runner lost the guard's share (suspended), not the agent.
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS, clock=TIMEOUT + 1)

    assert RunGuard not in kinds(effects)
    outcome = outcome_of(effects).outcome
    assert outcome.guard is GuardOutcome.SKIPPED
    assert outcome.runner_error is not None and "before the guard could run" in outcome.runner_error
    assert outcome.tree.children[1].attempts == 0


# ---------------------------------------------------------------- config, counts, directories


@pytest.mark.parametrize("seen", [ConfigRead(b"changed"), ConfigRead(None)])
def test_a_config_the_agent_changed_or_deleted_is_restored(seen: ConfigRead) -> None:
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, ReadConfig: seen})

    assert RestoreConfig(CONFIG_BYTES) in effects


HEAD_BEFORE = GitHead("runner/run-1", "a" * 40)


def test_an_unmoved_head_is_checked_once_and_left_alone() -> None:
    checked = attrs.evolve(facts(), head=HEAD_BEFORE)
    unmoved = HeadRead(BranchSeen(HEAD_BEFORE, HEAD_BEFORE.sha))
    effects, _ = drive(start_iteration(checked), {**EXECUTOR_RESULTS, ReadHead: unmoved})

    assert ReadHead(HEAD_BEFORE) in effects and kinds(effects).count(ReadHead) == 1
    assert CarryWork not in kinds(effects)
    assert commit_of(effects).onto is None
    assert outcome_of(effects).record.error_kind is None


def test_an_untouched_config_is_not_rewritten() -> None:
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS)

    assert RestoreConfig not in kinds(effects)


def test_execution_numbers_come_from_the_run_state() -> None:
    state = RunState(run_id="run-1", next_iter=5, executions=pmap({"leaf": 2, "done": 1}))
    effects, _ = drive(start_iteration(facts(state=state)), EXECUTOR_RESULTS)

    assert CountExecutions not in kinds(effects)
    assert outcome_of(effects).record.execution == 3
    executions = file_data(commit_of(effects), "run_state.json")["executions"]
    assert executions == {"done": 1, "leaf": 3}


def test_a_run_state_without_counts_asks_for_them_once() -> None:
    state = RunState(run_id="run-1", next_iter=5)
    results = {**EXECUTOR_RESULTS, CountExecutions: ExecutionsCounted({"leaf": 4})}
    effects, _ = drive(start_iteration(facts(state=state)), results)

    assert kinds(effects).count(CountExecutions) == 1
    assert outcome_of(effects).record.execution == 5


def test_a_left_over_iteration_directory_is_set_aside() -> None:
    entries = frozenset({"1", "1.interrupted-1"})

    assert start_iteration(facts(entries=entries)).effect == PrepareIterationDir("1.interrupted-2")
    assert set_aside_name("2", entries) is None


# ---------------------------------------------------------------- snapshots


def test_snapshots_link_to_the_previous_snapshot_when_tree_json_is_its_copy() -> None:
    state = RunState(run_id="run-1", next_iter=4, executions=pmap())
    sha256 = hashlib.sha256(dumps_tree(prev()).encode("utf-8")).hexdigest()
    effects, _ = drive(
        start_iteration(facts(state=state, previous_sha256=sha256)), EXECUTOR_RESULTS
    )
    files = {f.name: f for f in commit_of(effects).files}

    assert files["tree.before.json"].link_from == "3/tree.after.json"
    assert files["tree.before.json"].link_sha256 == sha256  # linked only while it holds those
    assert files["tree.before.json"].fallback_tree == prev()  # when the link cannot be made
    assert files["tree.after.json"].link_from is None
    assert files["tree.after.json"].data == files["tree.json"].data
    assert files["tree.before.json"].read_only and files["tree.after.json"].read_only
    assert not files["tree.json"].read_only and files["tree.json"].link_from is None


def test_an_unchanged_tree_links_its_after_snapshot_to_its_before_snapshot() -> None:
    results: dict[type, Result] = {
        RunAgent: AgentFinished(1, False, None, None),
        ReadConfig: ConfigRead(CONFIG_BYTES),
    }
    effects, _ = drive(start_iteration(facts()), results)
    files = {f.name: f for f in commit_of(effects).files}

    assert files["tree.after.json"].link_from == "1/tree.before.json"
    assert files["tree.before.json"].data == files["tree.after.json"].data
    data = files["tree.after.json"].data
    text = data.encode("utf-8") if isinstance(data, str) else data
    assert files["tree.after.json"].link_sha256 == hashlib.sha256(text).hexdigest()


def test_a_link_without_the_sha256_its_source_must_have_is_refused() -> None:
    with pytest.raises(ValueError, match="SHA-256"):
        FileWrite(Place.ITERATION, "tree.after.json", "{}", True, link_from="1/tree.before.json")


# ---------------------------------------------------------------- the error table


def test_every_failure_has_an_error_kind() -> None:
    assert set(ERROR_KIND) == set(Failure)
    runner = {failure for failure, kind in ERROR_KIND.items() if kind is ErrorKind.RUNNER}
    assert Failure.TREE_REJECTED not in runner and Failure.AGENT_NOT_STARTED in runner


# ---------------------------------------------------------------- the shell's interpreter


@attrs.define
class FakePorts:
    """Every port of an iteration, recording what it was asked to do."""

    results: dict[type, Result]
    calls: list[str] = attrs.field(factory=list)
    journals: list[Journal] = attrs.field(factory=list)
    seconds: float = 0.0

    def now(self) -> ClockReading:
        self.seconds += 1.0
        return at(self.seconds)

    def run_agent(self, effect: RunAgent, journal: Journal) -> AgentFinished | NotStarted:
        self.calls.append("agent")
        result = self.results[RunAgent]
        assert isinstance(result, AgentFinished | NotStarted)
        return result

    def run_guard(self, effect: RunGuard, journal: Journal) -> GuardFinished | NotStarted:
        self.calls.append("guard")
        return GuardFinished(0, False)

    def prepare(self, effect: PrepareIterationDir) -> None:
        self.calls.append("prepare")

    def write_context(self, effect: WriteContext) -> None:
        self.calls.append("context")

    def write_journal(self, journal: Journal) -> None:
        self.journals.append(journal)

    def write_iteration_file(self, effect: WriteIterationFile) -> None:
        if effect.name == "prompt.md" and PrepareIterationDir in self.results:
            raise OSError(28, "No space left on device")
        self.calls.append(effect.name)

    def read_tree(self) -> TreeRead:
        return TreeRead(edited_tree())

    def read_config(self) -> ConfigRead:
        return ConfigRead(CONFIG_BYTES)

    def restore_config(self, data: bytes) -> None:
        self.calls.append("restore")

    def read_head(self, effect: ReadHead) -> HeadRead:
        self.calls.append("head")
        return HeadRead(BranchSeen(HEAD_BEFORE, HEAD_BEFORE.sha))

    def carry_work(self, effect: CarryWork) -> Carried:
        self.calls.append("carry")
        return Carried(effect.changes)

    def count_executions(self) -> ExecutionsCounted:
        return ExecutionsCounted({})

    def commit(self, effect: Commit) -> Done:
        self.calls.append("commit " + effect.message.splitlines()[0])
        return Done()


def ports(fake: FakePorts) -> IterationPorts:
    return IterationPorts(
        clock=fake, agents=fake, guards=fake, records=fake, reader=fake, committer=fake
    )


def test_the_interpreter_carries_out_a_whole_iteration_through_its_ports() -> None:
    fake = FakePorts({RunAgent: agent_done()})

    finished = interpret(start_iteration(facts()), ports(fake))

    assert fake.calls == [
        "prepare",
        "context",
        "prompt.md",
        "agent",
        "guard",
        "commit chore(loop): run run-1 iter 1 node leaf status=done guard=pass",
    ]
    assert [journal.phase for journal in fake.journals] == [JournalPhase.RUNNING]
    assert finished.outcome.guard is GuardOutcome.PASS


def test_the_interpreter_feeds_an_os_error_back_as_a_runner_error() -> None:
    fake = FakePorts({RunAgent: agent_done(), PrepareIterationDir: Done()})

    finished = interpret(start_iteration(facts()), ports(fake))

    assert "agent" not in fake.calls
    assert finished.outcome.runner_error == "[Errno 28] No space left on device"


# ---------------------------------------------------------------- limits, signals, events


def test_an_agent_that_hit_a_limit_is_a_rate_limited_runner_error_carrying_its_signal() -> None:
    signal_ = LimitSignal(LimitKind.RATE_LIMITED, "asked to wait", retry_after_secs=5)
    limited = attrs.evolve(agent_done(), exit_code=1, limit=signal_)
    effects, machine = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunAgent: limited})

    assert machine.failure is Failure.RATE_LIMITED
    finished = outcome_of(effects)
    assert finished.outcome.runner_error == "rate_limited: asked to wait"
    assert finished.limit == signal_
    assert finished.record.attempts_after == finished.record.attempts_before
    assert RunGuard not in kinds(effects)


@pytest.mark.parametrize("stage", [RunAgent, RunGuard])
def test_a_signal_during_the_agent_or_guard_is_an_interrupted_runner_error(stage: type) -> None:
    stopped: Result = (
        attrs.evolve(agent_done(), interrupted="SIGTERM")
        if stage is RunAgent
        else GuardFinished(None, False, 78, "SIGTERM")
    )
    effects, machine = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, stage: stopped})

    assert machine.failure is Failure.INTERRUPTED
    finished = outcome_of(effects)
    assert finished.outcome.runner_error == "interrupted by SIGTERM"
    assert finished.record.attempts_after == finished.record.attempts_before
    assert isinstance(effects[-2], Commit)


def test_a_guard_that_never_started_is_reported_as_its_record_says() -> None:
    not_started = NotStarted("cannot start 'ci': not found")
    results = {**EXECUTOR_RESULTS, RunGuard: not_started}
    machine = start_iteration(facts())
    while not isinstance(machine.effect, RunGuard):
        machine = machine.feed(results.get(type(machine.effect), Done()), at(1.0))

    (event,) = after_result(machine, not_started, "2026-01-01T00:00:00Z", 0.5)
    effects, _ = drive(machine, results)

    assert event.figures["outcome"] == outcome_of(effects).record.guard.value == "skipped"


def test_the_iteration_events_come_from_the_core_in_order() -> None:
    heard: list[Event] = []

    @attrs.frozen
    class Sink:
        def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
            heard.extend(events)

    interpret(start_iteration(facts()), ports(FakePorts({RunAgent: agent_done()})), Sink())

    assert [event.type.value for event in heard] == [
        "iteration_started",
        "agent_started",
        "agent_finished",
        "guard_started",
        "guard_finished",
        "iteration_finished",
    ]
    assert {(event.run_id, event.iter, event.node_id) for event in heard} == {("run-1", 1, "leaf")}
    assert heard[2].figures["exit_code"] == 0 and heard[2].figures["duration_ms"] == 1000
    assert heard[-1].figures["meta"]["status"] == "done"


def test_a_wait_file_that_is_not_a_wait_is_the_agents_error() -> None:
    agent = AgentFinished(1, False, None, None, wait_problem="retry_at is out of range")
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunAgent: agent})

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error == "wait file: retry_at is out of range"
    assert outcome.runner_error is None and outcome.guard is GuardOutcome.SKIPPED
    assert outcome.tree.children[1].attempts == 1
    assert RunGuard not in kinds(effects)


def test_an_output_file_the_agent_made_a_symlink_or_fifo_is_its_error() -> None:
    problem = "output file /it/output.json is not a regular file"
    agent = AgentFinished(0, False, None, problem, output_planted=True)
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunAgent: agent})

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error == f"output: {problem}"
    assert outcome.runner_error is None and outcome.guard is GuardOutcome.SKIPPED
    assert outcome.tree.children[1].attempts == 1
    assert RunGuard not in kinds(effects)


@pytest.mark.parametrize(
    ("reached", "named"),
    [
        ("pids_max", "pids_max (2048)"),
        ("memory_mb", "memory_mb (8192)"),
        ("tmp_mb", "tmp_mb (1024)"),
    ],
)
def test_an_agent_session_that_reached_a_sandbox_limit_is_its_error_naming_it(
    reached: str, named: str
) -> None:
    agent = attrs.evolve(agent_done(), exit_code=None, sandbox_limit=LimitHit(reached))
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunAgent: agent})

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error is not None and outcome.runner_error is None
    assert outcome.agent_error.startswith(f"the sandbox's {named} was reached; the session")
    assert outcome.tree.children[1].attempts == 1
    assert RunGuard not in kinds(effects)


def test_a_guard_that_reached_a_sandbox_limit_fails_the_iteration_naming_it() -> None:
    guard = GuardFinished(0, False, process_group=78, sandbox_limit=LimitHit("pids_max"))
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunGuard: guard})

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error is not None and outcome.runner_error is None
    assert outcome.agent_error.startswith("the sandbox's pids_max (2048) was reached by the guard")
    assert outcome.tree.children[1].attempts == 1


@pytest.mark.parametrize("role", ["agent", "guard"])
def test_a_pids_max_held_by_rlimit_says_how_many_tasks_outside_the_sandbox_counted(
    role: str,
) -> None:
    # Without a pids cgroup RLIMIT_NPROC counts every task of the runner's user: the line says
    # how many were not the session's, so a limit reached by the user's other work is told.
    if role == "agent":
        agent = attrs.evolve(agent_done(), exit_code=None, sandbox_limit=LimitHit("pids_max", 1900))
        results = {**EXECUTOR_RESULTS, RunAgent: agent}
    else:
        guard = GuardFinished(None, False, sandbox_limit=LimitHit("pids_max", 1900))
        results = {**EXECUTOR_RESULTS, RunGuard: guard}
    effects, _ = drive(start_iteration(facts()), results)

    error = outcome_of(effects).outcome.agent_error
    assert error is not None and error.startswith("the sandbox's pids_max (2048) was reached")
    assert "counts every task of the runner's user, 1900 of them outside the sandbox" in error
    assert error.endswith("raise [sandbox] pids_max in .runner/state/config.toml)")


def test_an_output_file_missing_or_not_json_stays_a_runner_error() -> None:
    agent = AgentFinished(0, False, None, "output file /it/output.json does not exist")
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunAgent: agent})

    outcome = outcome_of(effects).outcome
    assert outcome.agent_error is None and outcome.runner_error is not None
    assert outcome.tree.children[1].attempts == 0
