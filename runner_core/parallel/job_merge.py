"""A finished job joining the run branch: its tree, its files and its pass, merged onto the head.

Decides, for a job whose machine stopped before reading HEAD (its agent and guard done in its
own slot, from the commit it started at): what its iteration is told about the run branch as
it is now (tree, run state, head, config), its `tree.json` change merged three-way onto the
head's (`tree_merge.merge_trees`, then checked as any agent's tree is against the head's), which
of its files merge as they are and which changed on both sides, and what a conflict or a guard
that fails after the merge makes of it: a runner error (no attempt used) with nothing of it
imported, so the leaf runs again on the new head. Never reads git or runs a guard: the loop
hands over the head's side and carries the decisions out (docs/parallel.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from runner_core.changes.import_rules import EXECUTABLE_MODE, FILE_MODE, Change, ImportDecision
from runner_core.guard.report import TestReport
from runner_core.history.records import ErrorKind
from runner_core.iteration.effects import GuardFinished, RunGuard
from runner_core.iteration.facts import ERROR_KIND, MERGE_RERUNS, Failure, Stage, runner_error_text
from runner_core.iteration.guard_stage import GuardRun, judge_guard
from runner_core.iteration.machine import IterationMachine
from runner_core.iteration.plan import Review, conclude, guard_outcome, layer_problems
from runner_core.iteration.steps import timed_guard_effect
from runner_core.parallel.tree_merge import TreeConflict, merge_trees
from runner_core.run.outside_change import GitHead
from runner_core.run.state import RunState
from runner_core.tree.model import GuardOutcome, Node
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.status import status_findings

# A path's entry in a commit: its mode and blob id; None when the commit does not have it.
Entry = tuple[str, str] | None


@attrs.frozen(slots=True)
class HeadSide:
    """The run branch as a finished job finds it when its turn to merge comes."""

    head: GitHead
    tree: Node
    tree_sha256: str | None  # of tree.json's bytes at the head
    state: RunState
    config_bytes: bytes
    previous_snapshot_sha256: str | None  # the previous iteration's tree.after.json, when equal


@attrs.frozen(slots=True)
class FileMerge:
    """A job's file changes against the head: `clean` apply as they are; `both` changed on
    both sides (regular files on each), to be merged line by line; `conflicts` cannot be."""

    clean: tuple[Change, ...] = ()
    both: tuple[Change, ...] = ()
    conflicts: tuple[str, ...] = ()


def waits_to_merge(machine: IterationMachine) -> bool:
    """Whether a job's machine has done all it does in its own slot: what follows reads the
    run branch (HEAD, config.toml) and commits, which only the merge queue may do."""
    return machine.stage is Stage.HEAD


def onto_head(machine: IterationMachine, side: HeadSide) -> IterationMachine:
    """The job's machine as if it had started from the head: its facts are the head's, its run
    state says its own iteration runs next, and when the head moved an agent's tree is merged
    onto the head's tree; a tree that does not merge is a runner error."""
    assert waits_to_merge(machine), machine.stage
    facts = machine.facts
    moved = attrs.evolve(
        machine,
        facts=attrs.evolve(
            facts,
            tree=side.tree,
            tree_sha256=side.tree_sha256,
            state=attrs.evolve(side.state, next_iter=facts.plan.iteration),
            head=side.head,
            config_bytes=side.config_bytes,
            previous_snapshot_sha256=side.previous_snapshot_sha256,
        ),
    )
    review = machine.review
    unmoved = facts.head is not None and facts.head.sha == side.head.sha
    if unmoved or review is None or review.tree is None or _runner_error(machine):
        return moved
    merged = merged_review(facts.tree, side.tree, facts.node.id, review, machine.guard)
    if isinstance(merged, str):
        return refused(moved, Failure.MERGE_CONFLICT, merged)
    return attrs.evolve(moved, review=merged)


def merged_review(
    base: Node, head: Node, node_id: str, review: Review, guard: GuardOutcome
) -> Review | str:
    """The review with its tree merged onto `head`, or the one line saying why it does not.

    The job's side is the tree its iteration would have committed (runner-owned fields set by
    the runner), so an agent's edit of a runner-owned field never conflicts; the merge must
    then pass the checks any agent's tree passes against the head's."""
    assert review.tree is not None
    theirs = conclude(base, node_id, review, guard).tree
    merged = merge_trees(base, head, theirs)
    if isinstance(merged, TreeConflict):
        return merged.line
    status = review.status
    problems = layer_problems(
        (
            ("immutability failed", messages(passed_node_findings(head, merged))),
            ("status invariants failed", messages(status_findings(head, merged, node_id, status))),
        )
    )
    if problems:
        return "tree.json does not merge: " + "; ".join(problems)
    return attrs.evolve(review, tree=merged)


def _runner_error(machine: IterationMachine) -> bool:
    return machine.failure is not None and ERROR_KIND[machine.failure] is ErrorKind.RUNNER


def refused(machine: IterationMachine, failure: Failure, message: str) -> IterationMachine:
    """The job as a runner error that takes none of its files or tree: it runs again later.
    The runner-owned paths it changed are still noted in the iteration log."""
    imported = machine.imported or ImportDecision()
    return attrs.evolve(
        machine,
        failure=failure,
        runner_error=runner_error_text(failure, message),
        output=None,
        imported=ImportDecision(discarded=imported.discarded),
    )


def merge_files(
    changes: Sequence[Change], base: Mapping[str, Entry], head: Mapping[str, Entry]
) -> FileMerge:
    """How each of a job's changed paths joins the head, given each path's entry at the job's
    start commit (`base`) and at the head (a path missing from a mapping has none there)."""
    clean: list[Change] = []
    both: list[Change] = []
    conflicts: list[str] = []
    for change in changes:
        before, now = base.get(change.path), head.get(change.path)
        mine: Entry = (
            None if change.oid is None or change.mode is None else (change.mode, change.oid)
        )
        if now in (before, mine):
            clean.append(change)
        elif (
            before is not None
            and now is not None
            and mine is not None
            and _files(before, now, mine)
        ):
            both.append(change)
        else:
            conflicts.append(change.path)
    return FileMerge(tuple(clean), tuple(both), tuple(sorted(conflicts)))


def _files(*entries: tuple[str, str]) -> bool:
    """Whether every side is a regular file of one mode: only those merge line by line."""
    modes = {mode for mode, _ in entries}
    return len(modes) == 1 and modes <= {FILE_MODE, EXECUTABLE_MODE}


def conflict_line(paths: Sequence[str]) -> str:
    """The runner error of a job whose files changed on both sides and do not merge."""
    shown = ", ".join(sorted(paths)[:NAMED_PATHS])
    more = len(paths) - NAMED_PATHS
    tail = f" and {more} more" if more > 0 else ""
    return f"files do not merge with the work merged since the job started: {shown}{tail}"


def broke_after_merge(merged_since: Sequence[int]) -> str:
    """The runner error of a job whose guard passed alone and fails on the merged result."""
    numbers = ", ".join(str(number) for number in merged_since)
    return (
        f"the guard passed on the job's own checkout but fails once iterations {numbers} are "
        "merged; the leaf runs again on the new head"
    )


NAMED_PATHS = 10
MERGE_GUARD_LOG = "guard.merged.log"
MERGE_GUARD_REPORT = ".guard-report.merged.xml"


def merge_rerun(machine: IterationMachine) -> bool:
    """Whether the job ends as a merge's rerun: its leaf runs again on the new head, and the
    loop's policy does not count it as the runner's failure (no backoff, no stop)."""
    return machine.failure in MERGE_RERUNS


def merge_guard(machine: IterationMachine) -> RunGuard | None:
    """The guard run on the merged result of a job whose pass would count, else None: a job
    that did not pass keeps its own outcome. It gets the iteration's whole timeout."""
    facts = machine.facts
    passing = (
        machine.failure is None
        and machine.review is not None
        and machine.review.needs_guard
        and machine.guard is GuardOutcome.PASS
    )
    if not passing:
        return None
    timeout = float(facts.config.iteration_timeout_secs)
    return timed_guard_effect(machine, timeout, GuardRun.JUDGE, MERGE_GUARD_REPORT, MERGE_GUARD_LOG)


def merge_guard_passed(
    machine: IterationMachine, baseline: TestReport | None, result: GuardFinished
) -> bool:
    """Whether the guard passes on the merged result, judged as the job's own run was: by its
    exit code, or by the ratchet against the head's baseline (the tests of the work merged)."""
    if result.interrupted is not None or result.timed_out:
        return False
    exit_outcome = guard_outcome(result.exit_code, result.timed_out)
    judgement = judge_guard(
        machine.facts.config,
        machine.facts.node.acceptance,
        baseline,
        result.report,
        result.report_problem,
        (),
        exit_outcome,
    )
    return judgement.outcome is GuardOutcome.PASS
