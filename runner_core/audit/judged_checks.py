"""The run branch holds only judged work: what `runner audit` checks of it.

Decides the findings for a commit of the run branch that changes files outside `.runner/`
without an iteration judged `status=done guard=pass` (a failed, retried or refused iteration's
commit; an operator's commit or a hand edit that no iteration judged a pass followed: the
audit holds those until one does, its guard having run on the line that holds them), for an
iteration that set files aside whose attempt ref (`refs/runner/attempts/<run>/<iter>`) is
missing or not on the commit its files were made from, and for an attempt ref no iteration
set files aside on. Never reads git: the shell hands
in each commit's paths and the run's attempt refs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from runner_core.audit.findings import Problem
from runner_core.history.execution import ExecutionRecord
from runner_core.iteration.record import attempt_ref
from runner_core.tree.model import AgentStatus, GuardOutcome

# How many paths a finding names.
NAMED_PATHS = 5


@attrs.frozen(slots=True)
class AttemptFacts:
    """An attempt ref of the run as git has it: its commit and that commit's first parent."""

    commit: str
    parent: str | None


def judged_a_pass(record: ExecutionRecord) -> bool:
    return (record.status, record.guard, record.error_kind) == (
        AgentStatus.DONE,
        GuardOutcome.PASS,
        None,
    )


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:NAMED_PATHS])
    return shown + (", ..." if len(paths) > NAMED_PATHS else "")


def unjudged_file_problems(
    record: ExecutionRecord | None, outside: Sequence[str]
) -> tuple[Problem, ...]:
    """A commit that changes files outside `.runner/` is an iteration judged a pass, or a
    finding (`record` None: the commit is no iteration's)."""
    if not outside or (record is not None and judged_a_pass(record)):
        return ()
    if record is None:
        return (
            (
                "",
                f"changes files outside .runner/ with no iteration judging them: {_named(outside)}",
            ),
        )
    verdict = f"status={record.status.value} guard={record.guard.value}"
    if record.error_kind is not None:
        verdict += f" error={record.error_kind.value}"
    return (
        (
            record.node_id,
            f"iteration not judged a pass ({verdict}) changes files outside .runner/: "
            f"{_named(outside)}",
        ),
    )


def attempt_problems(
    record: ExecutionRecord, found: AttemptFacts | None, parent: str | None
) -> tuple[Problem, ...]:
    """An iteration that set files aside has its attempt ref, on the commit they were made
    from: the commit before its own on the run branch, or its job's start commit."""
    if record.attempt_files == 0:
        return ()
    ref = attempt_ref(record.run_id, record.iteration)
    if found is None:
        return ((record.node_id, f"{ref} is missing ({record.attempt_files} files set aside)"),)
    bases = {parent, record.job_base} - {None}
    if found.parent not in bases:
        return (
            (
                record.node_id,
                f"{ref} is not on the commit iteration {record.iteration} started from",
            ),
        )
    return ()


def stray_attempts(
    attempts: Mapping[int, AttemptFacts], set_aside: Iterable[int], run_id: str
) -> tuple[tuple[int, str], ...]:
    """The attempt refs no iteration of the run set files aside on: (iteration, what)."""
    kept = frozenset(set_aside)
    return tuple(
        (number, f"{attempt_ref(run_id, number)} holds files no iteration set aside")
        for number in sorted(attempts)
        if number not in kept
    )
