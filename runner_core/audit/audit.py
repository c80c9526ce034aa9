"""`runner audit`: whether a run's history in git proves every pass it claims.

Decides, from the run branch's commits since `chore(loop): start run <id>` alone, walking them
in order, whether the iterations run 1..n and the hash chain holds, and which passed leaves no
iteration proved; each commit is checked by the rules of its kind (iteration_checks.py,
operator_checks.py, hand_edits.py). Never reads git: the shell hands in each commit's facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
from pyrsistent import PMap, pmap

from runner_core.audit.commit_facts import (
    QUESTIONS_PATH,
    RUN_STATE_PATH,
    STATE_DIR,
    TREE_PATH,
    CommitFacts,
    is_config_commit,
    is_tell_commit,
    tree_of,
)
from runner_core.audit.findings import AuditReport, Finding, OperatorEntry, Problem
from runner_core.audit.hand_edits import hand_edit_problems
from runner_core.audit.iteration_checks import (
    merge_replay_problems,
    numbering_problems,
    replay_problems,
    run_state_problems,
)
from runner_core.audit.judged_checks import (
    AttemptFacts,
    attempt_problems,
    judged_a_pass,
    stray_attempts,
    unjudged_file_problems,
)
from runner_core.audit.operator_checks import config_problems, operator_problems
from runner_core.run.chain import chain_link, chain_seed, is_chain_value
from runner_core.run.trailers import (
    ACTOR,
    CHAIN,
    CONFIG,
    OP,
    DamagedTrailer,
    is_iteration_commit,
    operator_from_trailers,
    parse_trailers,
    record_from_trailers,
)
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, iter_preorder

_ITERATION_NOTES = ("assumptions.md", "questions.md", "guidance.md")
# What of `.runner/state/` an iteration commit writes: the tree, the run state, the notes the
# agent may grow, and the guidance the loop hands on.
ITERATION_WRITES = frozenset(
    {TREE_PATH, RUN_STATE_PATH, *(STATE_DIR + name for name in _ITERATION_NOTES)}
)


@attrs.frozen(slots=True)
class _Walk:
    """What the audit carries from one commit to the next."""

    tree: Node | None
    chain: str
    next_iter: int
    passed_by: Mapping[str, int] = attrs.field(factory=dict)
    iterations: int = 0
    config: bytes | None = None
    # Every commit walked so far and its tree.json: a parallel job's base is one of them.
    earlier: PMap[str, bytes | None] = attrs.field(factory=pmap)
    previous: str | None = None  # the commit before this one
    # The run's attempt refs; None when git has none of the run's refs to check them by.
    attempts: PMap[int, AttemptFacts] | None = None
    set_aside: tuple[int, ...] = ()  # the iterations that set files aside on one


def _iteration(
    walk: _Walk, run_id: str, commit: CommitFacts, trailers: Mapping[str, str]
) -> tuple[_Walk, int | None, tuple[Problem, ...]]:
    try:
        record = record_from_trailers(trailers)
    except DamagedTrailer as error:
        # Carry on from what the commit claims, so one damaged commit is one finding.
        damaged_chain = trailers.get(CHAIN, "")
        chain = damaged_chain if is_chain_value(damaged_chain) else walk.chain
        after = tree_of(commit.tree_json)[0] or walk.tree
        return (
            attrs.evolve(
                walk,
                tree=after,
                chain=chain,
                next_iter=walk.next_iter + 1,
                iterations=walk.iterations + 1,
            ),
            None,
            (("", str(error)),),
        )
    problems = list(numbering_problems(walk.next_iter, run_id, record))
    problems.extend(owned_file_problems(commit.touched))
    problems.extend(unjudged_file_problems(record, commit.outside))
    if walk.attempts is not None:
        found = walk.attempts.get(record.iteration)
        problems.extend(attempt_problems(record, found, walk.previous))
    link = chain_link(walk.chain, record, commit.tree_json or b"")
    claimed = trailers.get(CHAIN)
    if claimed is None:
        problems.append(("", "missing trailer Runner-Chain"))
    elif claimed != link:
        problems.append(("", "Runner-Chain does not follow from the previous iteration"))
    after, unreadable = tree_of(commit.tree_json)
    if unreadable is not None:
        problems.append(("", unreadable))
    elif walk.tree is not None and after is not None:
        problems.extend(replay_problems(walk.tree, after, record))
        problems.extend(_merge_problems(walk, walk.tree, after, record.job_base))
    problems.extend(run_state_problems(commit.run_state_json, run_id, record, claimed))
    passed_by = dict(walk.passed_by)
    if (record.status, record.guard, record.error_kind) == (
        AgentStatus.DONE,
        GuardOutcome.PASS,
        None,
    ):
        passed_by.setdefault(record.node_id, record.iteration)
    chain = claimed if claimed is not None and is_chain_value(claimed) else link
    set_aside = (*walk.set_aside, record.iteration) if record.attempt_files else walk.set_aside
    following = attrs.evolve(
        walk,
        tree=after or walk.tree,
        chain=chain,
        next_iter=record.iteration + 1,
        passed_by=passed_by,
        iterations=walk.iterations + 1,
        config=commit.config_toml,
        set_aside=set_aside,
    )
    return following, record.iteration, tuple(problems)


def owned_file_problems(touched: Sequence[str]) -> tuple[Problem, ...]:
    """An iteration commit changes only the tree, the run state and the notes under
    `.runner/state/`: a runner-owned file it changed (config.toml, whose hooks run on the
    coordinator) came from no iteration the runner made, or from a remote answer let in."""
    return tuple(
        ("", f"runner-owned file {path} changed by an iteration commit")
        for path in touched
        if path not in ITERATION_WRITES
    )


def _merge_problems(
    walk: _Walk, parent: Node, after: Node, job_base: str | None
) -> tuple[Problem, ...]:
    """A parallel job's merge replayed from the commit it started at (`Runner-Job-Base`)."""
    if job_base is None:
        return ()
    if job_base not in walk.earlier:
        return (("", f"Runner-Job-Base {job_base} is no earlier commit of this run"),)
    base, _ = tree_of(walk.earlier[job_base])
    return () if base is None else merge_replay_problems(base, parent, after)


def _operator_commit(
    walk: _Walk, run_id: str, commit: CommitFacts, trailers: Mapping[str, str]
) -> tuple[tuple[Problem, ...], OperatorEntry | None]:
    try:
        action = operator_from_trailers(trailers)
    except DamagedTrailer as error:
        return (("", str(error)),), None
    entry = OperatorEntry(commit.sha, action.op, action.node_id, action.actor)
    problems: list[Problem] = [
        ("", f"hand edit {path}") for path in commit.touched if path != TREE_PATH
    ]
    if action.run_id != run_id:
        problems.append(("", f"Runner-Run {action.run_id} is not this run"))
    if action.next_iter != walk.next_iter:
        problems.append(("", f"Runner-Next-Iter {action.next_iter} where {walk.next_iter} follows"))
    after, unreadable = tree_of(commit.tree_json)
    if unreadable is not None:
        problems.append(("", unreadable))
    elif walk.tree is not None and after is not None:
        problems.extend(operator_problems(walk.tree, after, action))
    return tuple(problems), entry


def _note_entry(commit: CommitFacts, trailers: Mapping[str, str]) -> OperatorEntry:
    op = "answer" if QUESTIONS_PATH in commit.touched else "tell"
    return OperatorEntry(commit.sha, op, None, trailers[ACTOR])


def _classify(
    walk: _Walk, run_id: str, commit: CommitFacts, trailers: Mapping[str, str]
) -> tuple[_Walk, int | None, tuple[Problem, ...], OperatorEntry | None]:
    """One commit's problems and the walk after it."""
    if is_iteration_commit(trailers):
        following, iteration, problems = _iteration(walk, run_id, commit, trailers)
        return following, iteration, problems, None
    after, _ = tree_of(commit.tree_json)
    moved_on = attrs.evolve(walk, tree=after or walk.tree, config=commit.config_toml)
    if OP in trailers:
        problems, entry = _operator_commit(walk, run_id, commit, trailers)
        return moved_on, None, problems, entry
    if is_tell_commit(commit, trailers):
        return moved_on, None, (), _note_entry(commit, trailers)
    if is_config_commit(commit, trailers):
        key = trailers[CONFIG]
        entry = OperatorEntry(commit.sha, "config", None, trailers[ACTOR])
        problems = config_problems(walk.config, commit.config_toml, key)
        return moved_on, None, problems, entry
    return moved_on, None, hand_edit_problems(walk.tree, after, commit.touched), None


def _judges_the_line(trailers: Mapping[str, str]) -> bool:
    """Whether the commit is an iteration judged a pass: its guard ran on the whole line up to
    it, whatever commits of the operator's it holds."""
    if not is_iteration_commit(trailers):
        return False
    try:
        return judged_a_pass(record_from_trailers(trailers))
    except DamagedTrailer:
        return False


def _passed_leaves(tree: Node) -> frozenset[str]:
    return frozenset(node.id for node, _ in iter_preorder(tree) if node.is_leaf and node.passes)


def audit_run(
    run_id: str,
    start: CommitFacts,
    commits: Sequence[CommitFacts],
    attempts: Mapping[int, AttemptFacts] | None = None,
) -> AuditReport:
    """Check a run from its start commit and every later commit of its branch, in order, and
    its attempt refs (`attempts`, by iteration; None: not checked, git holds none of the run's
    refs) against the iterations that set files aside."""
    initial, unreadable = tree_of(start.tree_json)
    earlier = pmap({start.sha: start.tree_json})
    walk = _Walk(
        initial,
        chain_seed(run_id),
        1,
        config=start.config_toml,
        earlier=earlier,
        previous=start.sha,
        attempts=None if attempts is None else pmap(attempts),
    )
    findings: list[Finding] = []
    if unreadable is not None:
        findings.append(Finding(0, "", f"start commit: {unreadable}", start.sha, None))
    actions: list[OperatorEntry] = []
    unjudged: list[Finding] = []
    for position, commit in enumerate(commits, start=1):
        try:
            trailers: Mapping[str, str] = parse_trailers(commit.message)
        except DamagedTrailer as error:
            findings.append(Finding(position, "", str(error), commit.sha, None))
            trailers = {}
        walk, iteration, problems, entry = _classify(walk, run_id, commit, trailers)
        walk = attrs.evolve(
            walk, earlier=walk.earlier.set(commit.sha, commit.tree_json), previous=commit.sha
        )
        findings.extend(
            Finding(position, node, what, commit.sha, iteration) for node, what in problems
        )
        if entry is not None:
            actions.append(entry)
        # Files a commit that is no iteration's put on the line (the operator's own commit
        # the runner kept) are judged by the next iteration that passes on top of them.
        if _judges_the_line(trailers):
            unjudged.clear()
        elif not is_iteration_commit(trailers):
            unjudged.extend(
                Finding(position, node, what, commit.sha, None)
                for node, what in unjudged_file_problems(None, commit.outside)
            )
    findings.extend(unjudged)
    last = commits[-1].sha if commits else start.sha
    inherited = _passed_leaves(initial) if initial is not None else frozenset()
    findings.extend(_end_findings(walk, run_id, len(commits) + 1, last, inherited))
    return AuditReport(
        run_id, walk.iterations, tuple(actions), tuple(sorted(findings)), tuple(sorted(inherited))
    )


def _end_findings(
    walk: _Walk, run_id: str, position: int, last: str, inherited: frozenset[str]
) -> list[Finding]:
    """What only the whole walk shows: attempt refs no iteration made, passed leaves no
    iteration passed."""
    findings = [
        Finding(position, "", what, last, number)
        for number, what in stray_attempts(walk.attempts or {}, walk.set_aside, run_id)
    ]
    if walk.tree is not None:
        findings.extend(
            Finding(
                position,
                leaf,
                "passed leaf without an iteration status=done guard=pass on it",
                last,
                None,
            )
            for leaf in sorted(_passed_leaves(walk.tree) - inherited - walk.passed_by.keys())
        )
    return findings
