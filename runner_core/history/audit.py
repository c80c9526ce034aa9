"""`runner audit`: whether a run's history in git proves every pass it claims.

Decides, from the run branch's commits since `chore(loop): start run <id>` alone, whether each
iteration changed runner-owned fields exactly as the transition table allows for its recorded node,
status and guard, whether the iterations run 1..n and the hash chain holds, whether each
operator commit did only what its op allows, and which other commits edited `.runner/state/` by
hand (and, for `runner validate`, which runner-owned fields differ from the last runner commit).
Never reads git: the shell hands in each commit's facts (`CommitFacts`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.history.records import ErrorKind, ExecutionRecord
from runner_core.iteration.state_update import UnknownSelectedNode, apply_state_updates
from runner_core.run.chain import chain_link, chain_seed, is_chain_value
from runner_core.run.config_change import only_key_changed
from runner_core.run.state import RunStateError, run_state_from_json
from runner_core.run.trailers import (
    ACTOR,
    CHAIN,
    CONFIG,
    OP,
    DamagedTrailer,
    OperatorTrailers,
    is_iteration_commit,
    operator_from_trailers,
    parse_trailers,
    record_from_trailers,
)
from runner_core.tree.diff import ChangeKind, NodeChange, tree_diff
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, iter_preorder, nodes_by_id
from runner_core.tree.serialization import TreeValidationError, loads_json_strictly, parse_tree
from runner_core.validation.immutability import check_passed_node_immutability
from runner_core.validation.invariants import validate_invariants

STATE_DIR = ".runner/state/"
TREE_PATH = STATE_DIR + "tree.json"
RUN_STATE_PATH = STATE_DIR + "run_state.json"
CONFIG_PATH = STATE_DIR + "config.toml"
QUESTIONS_PATH = STATE_DIR + "questions.md"
# What `runner tell` (and `tell --clear`) and `runner answer` commit: guidance, and the questions
# an answer closes. A commit touching only these and naming its actor is an operator's.
TELL_PATHS: frozenset[str] = frozenset({STATE_DIR + "guidance.md", QUESTIONS_PATH})
RUNNER_OWNED: tuple[str, ...] = ("passes", "attempts")


@attrs.frozen(slots=True)
class CommitFacts:
    """One commit of the run branch as the audit needs it.

    `tree_json`/`run_state_json` are the files' bytes after the commit (None when absent);
    `touched` the paths under `.runner/state/` the commit changed, relative to the repository.
    """

    sha: str
    message: str
    tree_json: bytes | None
    run_state_json: bytes | None
    touched: tuple[str, ...] = ()
    config_toml: bytes | None = None

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


@attrs.frozen(slots=True, order=True)
class Finding:
    """Something the history does not prove; `position` is the commit's place in the run."""

    position: int
    node: str
    what: str
    commit: str = attrs.field(order=False)
    iteration: int | None = attrs.field(order=False)

    @property
    def line(self) -> str:
        iteration = "-" if self.iteration is None else str(self.iteration)
        return (
            f"audit: finding commit={self.commit[:8]} iter={iteration} "
            f"node={self.node or '-'} {self.what}"
        )


@attrs.frozen(slots=True)
class OperatorEntry:
    """An operator commit as the audit lists it."""

    commit: str
    op: str
    node: str | None
    actor: str


@attrs.frozen(slots=True)
class AuditReport:
    run_id: str
    iterations: int
    operator_actions: tuple[OperatorEntry, ...]
    findings: tuple[Finding, ...]
    passed_before_start: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.findings

    def lines(self) -> tuple[str, ...]:
        """The summary line, then one line per finding, in order."""
        summary = (
            f"audit: run={self.run_id} iterations={self.iterations} "
            f"operator_ops={len(self.operator_actions)} findings={len(self.findings)}"
        )
        return (summary, *(finding.line for finding in self.findings))


# A problem on one commit, before it knows its commit: (node id or "", what).
Problem = tuple[str, str]


def _tree(data: bytes | None) -> tuple[Node | None, str | None]:
    if data is None:
        return None, "tree.json is missing"
    try:
        return parse_tree(data), None
    except TreeValidationError as error:
        return None, f"tree.json is not a valid tree: {error}"


_QUOTED = re.compile(r"'([^']*)'")


def _named(messages: Sequence[str]) -> tuple[Problem, ...]:
    """Validator messages as problems on the first node each one quotes."""
    return tuple(
        (match.group(1) if (match := _QUOTED.search(text)) else "", text) for text in messages
    )


# ---------------------------------------------------------------- iteration commits


def _owned_problems(after: Node, expected: Node) -> tuple[Problem, ...]:
    wanted = nodes_by_id(expected)
    problems: list[Problem] = []
    for node, _ in iter_preorder(after):
        model = wanted.get(node.id)
        if model is None:
            continue
        for field in RUNNER_OWNED:
            actual, allowed = getattr(node, field), getattr(model, field)
            if actual != allowed:
                problems.append(
                    (
                        node.id,
                        f"{field} is {_show(actual)} where seed 000's table gives {_show(allowed)}",
                    )
                )
    return tuple(problems)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _attempts_problems(prev: Node, after: Node, record: ExecutionRecord) -> tuple[Problem, ...]:
    before = nodes_by_id(prev).get(record.node_id)
    now = nodes_by_id(after).get(record.node_id)
    if before is None or now is None:
        return ()
    claimed = (record.attempts_before, record.attempts_after)
    if claimed == (before.attempts, now.attempts):
        return ()
    return (
        (
            record.node_id,
            f"Runner-Attempts {claimed[0]}/{claimed[1]} where the trees give "
            f"{before.attempts}/{now.attempts}",
        ),
    )


def _kept_tree_problems(prev: Node, after: Node, kind: ErrorKind) -> tuple[Problem, ...]:
    """An iteration with an agent or runner error keeps the tree but for runner-owned fields."""
    problems: list[Problem] = []
    for change in tree_diff(prev, after).changes:
        extra = [field.field for field in change.fields if field.field not in RUNNER_OWNED]
        if change.kind is not ChangeKind.CHANGED:
            what = change.kind.value
        elif extra:
            what = f"{', '.join(extra)} changed"
        elif change.moved:
            what = "moved"
        else:
            continue
        problems.append(
            (
                change.node_id,
                f"{what} by an iteration with a {kind.value} error, which keeps the tree",
            )
        )
    return tuple(problems)


def replay_problems(prev: Node, after: Node, record: ExecutionRecord) -> tuple[Problem, ...]:
    """How the tree after an iteration differs from what the runner could have left.

    The runner's reset is replayed with `apply_state_updates`; a runner error keeps the tree
    and every attempt, replayed as the table's row that sets nothing, done/skipped.
    """
    kept = () if record.error_kind is None else _kept_tree_problems(prev, after, record.error_kind)
    status, guard = record.status, record.guard
    if record.error_kind is ErrorKind.RUNNER:
        status, guard = AgentStatus.DONE, GuardOutcome.SKIPPED
    try:
        expected, _ = apply_state_updates(prev, after, record.node_id, status, guard)
    except UnknownSelectedNode:
        return (*kept, (record.node_id, "the recorded node is not in tree.json"))
    return (
        *kept,
        *_owned_problems(after, expected),
        *_attempts_problems(prev, after, record),
        *_named(check_passed_node_immutability(prev, after)),
    )


def _run_state_problems(
    data: bytes | None, run_id: str, record: ExecutionRecord, chain: str | None
) -> tuple[Problem, ...]:
    """run_state.json after an iteration against its commit: the chain the commit's
    Runner-Chain names (None when it names none, a finding of its own), then the iteration
    it follows; both are checked, so one forged file is not half read."""
    try:
        state = run_state_from_json(loads_json_strictly((data or b"").decode("utf-8")))
    except (RunStateError, ValueError) as error:
        return (("", f"run_state.json does not read: {error}"),)
    problems: list[Problem] = []
    if state.chain is not None and chain is not None and state.chain != chain:
        problems.append(("", "run_state.json chain is not the commit's Runner-Chain"))
    claimed = (state.run_id, state.next_iter, state.last_status, state.last_guard)
    wanted = (run_id, record.iteration + 1, record.status, record.guard)
    if claimed != wanted:
        problems.append(
            (
                "",
                f"run_state.json run_id={state.run_id} next_iter={state.next_iter} does not "
                f"follow iteration {record.iteration} (run_id={run_id} "
                f"next_iter={record.iteration + 1}, last status and guard as recorded)",
            )
        )
    return tuple(problems)


@attrs.frozen(slots=True)
class _Walk:
    """What the audit carries from one commit to the next."""

    tree: Node | None
    chain: str
    next_iter: int
    passed_by: Mapping[str, int] = attrs.field(factory=dict)
    iterations: int = 0
    config: bytes | None = None


def _numbering_problems(walk: _Walk, run_id: str, record: ExecutionRecord) -> tuple[Problem, ...]:
    problems: list[Problem] = []
    if record.run_id != run_id:
        problems.append(("", f"Runner-Run {record.run_id} is not this run"))
    if record.iteration != walk.next_iter:
        problems.append(
            (
                "",
                f"iteration {record.iteration} where {walk.next_iter} follows "
                "(an iteration is missing or repeated)",
            )
        )
    return tuple(problems)


def _iteration(
    walk: _Walk, run_id: str, commit: CommitFacts, trailers: Mapping[str, str]
) -> tuple[_Walk, int | None, tuple[Problem, ...]]:
    try:
        record = record_from_trailers(trailers)
    except DamagedTrailer as error:
        # Carry on from what the commit claims, so one damaged commit is one finding.
        damaged_chain = trailers.get(CHAIN, "")
        chain = damaged_chain if is_chain_value(damaged_chain) else walk.chain
        after = _tree(commit.tree_json)[0] or walk.tree
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
    problems = list(_numbering_problems(walk, run_id, record))
    link = chain_link(walk.chain, record, commit.tree_json or b"")
    claimed = trailers.get(CHAIN)
    if claimed is None:
        problems.append(("", "missing trailer Runner-Chain"))
    elif claimed != link:
        problems.append(("", "Runner-Chain does not follow from the previous iteration"))
    after, unreadable = _tree(commit.tree_json)
    if unreadable is not None:
        problems.append(("", unreadable))
    elif walk.tree is not None and after is not None:
        problems.extend(replay_problems(walk.tree, after, record))
    problems.extend(_run_state_problems(commit.run_state_json, run_id, record, claimed))
    passed_by = dict(walk.passed_by)
    if (record.status, record.guard, record.error_kind) == (
        AgentStatus.DONE,
        GuardOutcome.PASS,
        None,
    ):
        passed_by.setdefault(record.node_id, record.iteration)
    chain = claimed if claimed is not None and is_chain_value(claimed) else link
    following = _Walk(
        after or walk.tree,
        chain,
        record.iteration + 1,
        passed_by,
        walk.iterations + 1,
        commit.config_toml,
    )
    return following, record.iteration, tuple(problems)


# ---------------------------------------------------------------- operator commits


def _subtree_ids(tree: Node, node_id: str) -> frozenset[str]:
    found = nodes_by_id(tree).get(node_id)
    if found is None:
        return frozenset()
    return frozenset(node.id for node, _ in iter_preorder(found))


def _fresh(change: NodeChange, after: Node) -> bool:
    """A node the operator's plan created: open, no attempt used."""
    found = nodes_by_id(after).get(change.node_id)
    return found is not None and not found.passes and found.attempts == 0


# The target node's own fields each op may change (runner_core/operations.py on h/ops);
# children come and go only under the target, and only open, with no attempt used.
OP_OWN_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "retry": frozenset({"max_attempts"}),
        "decompose": frozenset({"next", "max_attempts"}),
        "replace": frozenset({"title", "goal", "acceptance", "next", "attempts"}),
        "skip": frozenset(),
        "add": frozenset(),
        "edit": frozenset({"title", "goal", "acceptance"}),
    }
)


def _op_allows(op: str, target: str, prev: Node, after: Node, change: NodeChange) -> bool:
    """Whether `runner node <op> <target>` may make this change."""
    fields = {field.field: field for field in change.fields}
    if change.node_id == target and change.kind is ChangeKind.CHANGED:
        within = not change.moved and set(fields) <= OP_OWN_FIELDS[op]
        if op == "retry":
            return within and fields["max_attempts"].new > fields["max_attempts"].old
        return within and (op != "replace" or _fresh(change, after))
    if change.kind is ChangeKind.REMOVED:
        return op in ("replace", "skip") and change.node_id in _subtree_ids(prev, target)
    if op == "add":  # one fresh child, right under the target
        added = change.kind is ChangeKind.ADDED and change.parent_after == target
        return added and _fresh(change, after)
    if op in ("decompose", "replace"):
        return change.node_id in _subtree_ids(after, target) and _fresh(change, after)
    # A skip may complete the ancestors of what it removed: their passes are derived.
    return op == "skip" and change.kind is ChangeKind.CHANGED and set(fields) == {"passes"}


def operator_problems(prev: Node, after: Node, action: OperatorTrailers) -> tuple[Problem, ...]:
    """Every change of an operator commit its op does not allow, and broken invariants."""
    target = nodes_by_id(prev).get(action.node_id)
    if target is None:
        return ((action.node_id, f"operator {action.op} names a node not in the tree"),)
    if target.passes:
        return ((action.node_id, f"operator {action.op} on a passed node"),)
    problems: list[Problem] = [
        (
            change.node_id,
            f"operator {action.op} on {action.node_id} may not make this change: "
            f"{_change_text(change)}",
        )
        for change in tree_diff(prev, after).changes
        if not _op_allows(action.op, action.node_id, prev, after, change)
    ]
    if action.op == "skip" and action.node_id in nodes_by_id(after):
        problems.append((action.node_id, "operator skip left the node in the tree"))
    problems.extend(_named(check_passed_node_immutability(prev, after)))
    problems.extend(_named(validate_invariants(after)))
    return tuple(problems)


def _change_text(change: NodeChange) -> str:
    if change.kind is not ChangeKind.CHANGED:
        return f"{change.kind.value}"
    parts = [f"{field.field} {_show(field.old)} -> {_show(field.new)}" for field in change.fields]
    if change.moved:
        parts.append(f"moved {change.parent_before} -> {change.parent_after}")
    return ", ".join(parts)


# ---------------------------------------------------------------- other commits


def hand_edit_problems(
    prev: Node | None, after: Node | None, touched: Sequence[str]
) -> tuple[Problem, ...]:
    """A commit that is neither the runner's nor an operator's: each state change it made."""
    problems: list[Problem] = [
        ("", f"hand edit {path}") for path in sorted(touched) if path != TREE_PATH
    ]
    if TREE_PATH in touched:
        changes = () if prev is None or after is None else tree_diff(prev, after).changes
        problems.extend((change.node_id, f"hand edit {_change_text(change)}") for change in changes)
        if not changes:
            problems.append(("", f"hand edit {TREE_PATH}"))
    return tuple(problems)


# ---------------------------------------------------------------- the run


def _passed_leaves(tree: Node) -> frozenset[str]:
    return frozenset(node.id for node, _ in iter_preorder(tree) if node.is_leaf and node.passes)


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
    after, unreadable = _tree(commit.tree_json)
    if unreadable is not None:
        problems.append(("", unreadable))
    elif walk.tree is not None and after is not None:
        problems.extend(operator_problems(walk.tree, after, action))
    return tuple(problems), entry


def _is_tell(commit: CommitFacts, trailers: Mapping[str, str]) -> bool:
    """What `runner tell` commits: only TELL_PATHS, naming its actor. A Runner-Actor trailer
    on any other change is a hand edit's disguise, not an operator's commit."""
    return bool(commit.touched) and set(commit.touched) <= TELL_PATHS and ACTOR in trailers


def _is_config(commit: CommitFacts, trailers: Mapping[str, str]) -> bool:
    """What `runner config set|unset` commits: config.toml alone, naming its key and actor."""
    return set(commit.touched) == {CONFIG_PATH} and CONFIG in trailers and ACTOR in trailers


def _toml(data: bytes | None) -> Mapping[str, Any] | None:
    try:
        return tomllib.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def config_problems(before: bytes | None, after: bytes | None, key: str) -> tuple[Problem, ...]:
    """A config commit may change its named key and nothing else, and must leave a valid config;
    a config that did not read before is a finding of its own, so only the result is checked."""
    old, new = _toml(before), _toml(after)
    if new is None:
        return (("", f"config commit for {key}: {CONFIG_PATH} is not valid TOML"),)
    if old is None or only_key_changed(old, new, key):
        return ()
    return (
        ("", f"config commit for {key} changed more than {key} (a hand edit of {CONFIG_PATH})"),
    )


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
    after, _ = _tree(commit.tree_json)
    moved_on = attrs.evolve(walk, tree=after or walk.tree, config=commit.config_toml)
    if OP in trailers:
        return (moved_on, None, *_operator_commit(walk, run_id, commit, trailers))
    if _is_tell(commit, trailers):
        return moved_on, None, (), _note_entry(commit, trailers)
    if _is_config(commit, trailers):
        key = trailers[CONFIG]
        entry = OperatorEntry(commit.sha, "config", None, trailers[ACTOR])
        return moved_on, None, config_problems(walk.config, commit.config_toml, key), entry
    return moved_on, None, hand_edit_problems(walk.tree, after, commit.touched), None


def audit_run(run_id: str, start: CommitFacts, commits: Sequence[CommitFacts]) -> AuditReport:
    """Check a run from its start commit and every later commit of its branch, in order."""
    initial, unreadable = _tree(start.tree_json)
    walk = _Walk(initial, chain_seed(run_id), 1, config=start.config_toml)
    findings: list[Finding] = []
    if unreadable is not None:
        findings.append(Finding(0, "", f"start commit: {unreadable}", start.sha, None))
    actions: list[OperatorEntry] = []
    for position, commit in enumerate(commits, start=1):
        try:
            trailers: Mapping[str, str] = parse_trailers(commit.message)
        except DamagedTrailer as error:
            findings.append(Finding(position, "", str(error), commit.sha, None))
            trailers = {}
        walk, iteration, problems, entry = _classify(walk, run_id, commit, trailers)
        findings.extend(
            Finding(position, node, what, commit.sha, iteration) for node, what in problems
        )
        if entry is not None:
            actions.append(entry)
    inherited = _passed_leaves(initial) if initial is not None else frozenset()
    if walk.tree is not None:
        last = commits[-1].sha if commits else start.sha
        findings.extend(
            Finding(
                len(commits) + 1,
                leaf,
                "passed leaf without an iteration status=done guard=pass on it",
                last,
                None,
            )
            for leaf in sorted(_passed_leaves(walk.tree) - inherited - walk.passed_by.keys())
        )
    return AuditReport(
        run_id, walk.iterations, tuple(actions), tuple(sorted(findings)), tuple(sorted(inherited))
    )


def start_run_id(subject: str) -> str | None:
    """The run id of a start commit's subject, `chore(loop): start run <id>`."""
    prefix = "chore(loop): start run "
    return (
        subject[len(prefix) :]
        if subject.startswith(prefix) and len(subject) > len(prefix)
        else None
    )


# ---------------------------------------------------------------- runner validate


def _is_runners(commit: CommitFacts) -> bool:
    """Whether the runner made `commit`, by the rule `_classify` sorts commits with: a start,
    iteration, operator or tell commit."""
    try:
        trailers = parse_trailers(commit.message)
    except DamagedTrailer:
        return False
    return (
        start_run_id(commit.subject) is not None
        or is_iteration_commit(trailers)
        or OP in trailers
        or _is_tell(commit, trailers)
        or _is_config(commit, trailers)
    )


def owned_field_warnings(start: CommitFacts, commits: Sequence[CommitFacts]) -> tuple[str, ...]:
    """`runner validate`'s warnings: each runner-owned field the last commit's tree.json holds
    other than the last runner commit left (a hand edit `runner audit` names)."""
    chain = (start, *commits)
    last = next(commit for commit in reversed(chain) if _is_runners(commit))
    if last is chain[-1]:
        return ()
    before, after = _tree(last.tree_json)[0], _tree(chain[-1].tree_json)[0]
    if before is None or after is None:
        return ()
    return tuple(
        f"committed tree differs from the last runner commit {last.sha[:8]}: node "
        f"{change.node_id} field {field.field}: {_show(field.old)} -> {_show(field.new)} "
        "(a hand edit; 'runner audit' names it)"
        for change in tree_diff(before, after).changes
        for field in change.fields
        if field.field in RUNNER_OWNED
    )


def audit_to_json(report: AuditReport) -> dict[str, Any]:
    """The document of `runner audit --json` (schemas/views/audit.schema.json)."""
    return {
        "run_id": report.run_id,
        "clean": report.clean,
        "iterations": report.iterations,
        "operator_actions": [
            {"commit": entry.commit, "op": entry.op, "node": entry.node, "actor": entry.actor}
            for entry in report.operator_actions
        ],
        "passed_before_start": list(report.passed_before_start),
        "findings": [
            {
                "commit": finding.commit,
                "iter": finding.iteration,
                "node": finding.node or None,
                "what": finding.what,
            }
            for finding in report.findings
        ],
    }
