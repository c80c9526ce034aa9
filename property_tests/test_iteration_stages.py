"""Random results fed to the iteration machine move it only along its stage table.

Whatever the shell reports, in any order, the machine either makes a transition
`stages.TRANSITIONS` lists or raises `IterationMachineError`, and it raises only when the
result does not answer the effect it asked for (`results.ANSWERS`): no other exception, and a
fitting answer is never refused.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from runner_core import AgentRole, Node, dumps_tree, parse_config
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.changes.import_rules import EntryKind, ScratchEntry, ScratchListing
from runner_core.history.records import TokenUsage
from runner_core.iteration.effects import (
    ANSWERS,
    Abort,
    AgentFinished,
    Carried,
    CommitFailed,
    CommitPart,
    ConfigRead,
    Done,
    ExecutionsCounted,
    Finished,
    GuardFinished,
    HeadRead,
    IoFailed,
    NotStarted,
    Result,
    ScratchListed,
    TreeRead,
)
from runner_core.iteration.facts import (
    TRANSITIONS,
    ClockReading,
    IterationFacts,
    IterationMachineError,
    PromptParts,
)
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.plan import RunPlan, plan_step
from runner_core.run.outside_change import BranchSeen, GitHead
from runner_core.run.state import RunState
from tests.helpers.trees import tree

CONFIG_BYTES = b'[agent]\nbackend = "command"\ncommand = ["agent"]\n'
HEAD = GitHead("runner/run-1", "a" * 40)
_MOVED = GitHead("runner/run-1", "b" * 40)


def _roots() -> tuple[Node, ...]:
    return (
        tree("root", tree("done", passes=True, attempts=1, order=0), tree("leaf", order=1)),
        tree("root", tree("big", next="decompose")),
    )


def _facts(root: Node, checked: bool, counted: bool) -> IterationFacts:
    config = parse_config(
        {
            "agent": {"backend": "command", "command": ["agent"]},
            "guard": {"command": ["ci"]},
            "iteration_timeout_secs": 100,
        }
    )
    state = RunState(run_id="run-1", next_iter=1 if counted else 5)
    plan = plan_step(root, state, config.max_iterations)
    assert isinstance(plan, RunPlan)
    return IterationFacts(
        run_id="run-1",
        plan=plan,
        config=config,
        state=state,
        tree=root,
        goal="---\nid: run-1\n---\n\n# Goal\n",
        failure_log=None,
        config_bytes=CONFIG_BYTES,
        entries=frozenset(),
        previous_snapshot_sha256=None,
        prompt=PromptParts("contract", "output", None, None, None, 100_000),
        started=ClockReading(0.0, "2026-01-01T00:00:00Z"),
        runner_pid=42,
        command="runner step",
        head=HEAD if checked else None,
        scratch=checked,
        confined=counted,
    )


facts = st.builds(_facts, st.sampled_from(_roots()), st.booleans(), st.booleans())

_EXECUTOR_OUTPUT = json.dumps({"status": "done", "summary": "did it"})
_DECOMPOSER_OUTPUT = json.dumps(
    {
        "summary": "split",
        "children": [{"title": "A", "goal": "a", "acceptance": [], "next": "execute"}],
    }
)
_LIMIT = LimitSignal(LimitKind.RATE_LIMITED, "slow down")


def _mostly(usual: Result, *rare: Result) -> st.SearchStrategy[Result]:
    """`usual` three times in four: a healthy iteration must be likely, or late stages are rare."""
    healthy = st.just(usual)
    return st.one_of(healthy, healthy, healthy, st.sampled_from(rare)) if rare else healthy


def _results(role: AgentRole) -> dict[type, st.SearchStrategy[Result]]:
    """For each result type, the healthy one first, then the ways it goes wrong."""
    output = _DECOMPOSER_OUTPUT if role is AgentRole.DECOMPOSER else _EXECUTOR_OUTPUT
    return {
        Done: st.just(Done()),
        AgentFinished: _mostly(
            AgentFinished(0, False, output, None, TokenUsage(1, 2, 0), 0.25, 77),
            AgentFinished(0, False, json.dumps({"status": "retry", "summary": "again"}), None),
            AgentFinished(0, False, _EXECUTOR_OUTPUT if output != _EXECUTOR_OUTPUT else "[]", None),
            AgentFinished(0, False, "not json", None),
            AgentFinished(0, False, None, "output file is missing"),
            AgentFinished(1, False, None, None),
            AgentFinished(None, True, None, None),
            AgentFinished(-9, False, None, None, interrupted="SIGTERM"),
            AgentFinished(0, False, output, None, limit=_LIMIT),
        ),
        GuardFinished: _mostly(
            GuardFinished(0, False, 78),
            GuardFinished(1, False),
            GuardFinished(None, True),
            GuardFinished(None, False, interrupted="SIGINT"),
        ),
        TreeRead: _mostly(
            TreeRead(dumps_tree(_roots()[0]).encode()),
            TreeRead(b"{"),
            TreeRead(b"[]"),
            TreeRead(b"", "tree.json is missing"),
        ),
        ConfigRead: _mostly(ConfigRead(CONFIG_BYTES), ConfigRead(b"changed"), ConfigRead(None)),
        HeadRead: _mostly(
            HeadRead(BranchSeen(HEAD, HEAD.sha)),
            HeadRead(BranchSeen(_MOVED, _MOVED.sha, True, ("src/app.py",))),
            HeadRead(BranchSeen(_MOVED, _MOVED.sha, True, (".runner/state/tree.json",))),
            HeadRead(BranchSeen(_MOVED, _MOVED.sha)),
            HeadRead(BranchSeen(GitHead(None, "a" * 40), HEAD.sha)),
            HeadRead(BranchSeen(HEAD, None)),
        ),
        Carried: _mostly(Carried(()), Carried((), ("src/app.py",))),
        ScratchListed: _mostly(
            ScratchListed(ScratchListing(())),
            ScratchListed(ScratchListing((ScratchEntry("new.txt", EntryKind.FILE, 3, "3" * 40),))),
        ),
        ExecutionsCounted: st.builds(
            ExecutionsCounted, st.dictionaries(st.sampled_from(("leaf", "big")), st.integers(0, 9))
        ),
        NotStarted: st.just(NotStarted("cannot start 'agent': No such file or directory")),
        IoFailed: st.just(IoFailed("[Errno 28] No space left on device")),
        CommitFailed: st.builds(
            CommitFailed, st.sampled_from(CommitPart), st.just("git commit failed: locked")
        ),
    }


def _result_for(data: st.DataObject, machine: IterationMachine) -> Result:
    """Mostly a result that answers the effect, healthy more often than not (so every stage is
    reached); one in forty, any result at all."""
    results = _results(machine.facts.role)
    answers = ANSWERS.get(type(machine.effect), ())
    if answers and data.draw(st.integers(0, 39), label="fits") > 0:
        healthy, *failing = answers  # the first answer is the effect's success
        if data.draw(st.integers(0, 9), label="healthy") > 0:
            return data.draw(results[healthy])
        failed: st.SearchStrategy[Result] = st.one_of(*(results[kind] for kind in failing))
        return data.draw(failed)
    anything: st.SearchStrategy[Result] = st.one_of(*results.values())
    return data.draw(anything)


@given(facts, st.data(), st.sampled_from((1, 30, 60, 101)))
def test_random_results_move_the_machine_only_along_its_table(
    start: IterationFacts, data: st.DataObject, seconds: int
) -> None:
    """Every transition is in TRANSITIONS; IterationMachineError comes only, and always, from a
    result that does not answer the effect; a machine fed only answers ends at DONE."""
    machine = start_iteration(start)
    now = ClockReading(float(seconds), "2026-01-01T00:01:00Z")
    while not isinstance(machine.effect, Finished | Abort):
        result = _result_for(data, machine)
        fits = isinstance(result, ANSWERS[type(machine.effect)])
        try:
            after = machine.feed(result, now)
        except IterationMachineError:
            assert not fits, f"{result} answers {machine.effect} but was refused"
            return
        assert fits, f"{result} does not answer {machine.effect} but was accepted"
        assert after.stage in TRANSITIONS[machine.stage]
        machine = after
    assert not TRANSITIONS[machine.stage]
