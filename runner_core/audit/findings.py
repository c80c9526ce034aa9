"""The audit's report: its findings, the operator actions it lists, and how both read.

Decides the words of a finding (the node a validator's message quotes, how a value and a node's
change are shown), the report's lines and the document of `runner audit --json`. Never decides
what is a finding: the checks of each kind of commit do, and audit.py walks the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from runner_core.json_form import json_form
from runner_core.tree.diff import ChangeKind, NodeChange
from runner_core.validation.finding import Finding as ValidationFinding

# A problem on one commit, before it knows its commit: (node id or "", what).
Problem = tuple[str, str]


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
    """What `runner audit` found in one run: its counts, operator actions and findings."""

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


_QUOTED = re.compile(r"'([^']*)'")


def finding_problems(findings: Sequence[ValidationFinding]) -> tuple[Problem, ...]:
    """Validator findings as problems on the node each one names (an id may hold a quote)."""
    return tuple((finding.node_id or "", finding.message) for finding in findings)


def named_problems(messages: Sequence[str]) -> tuple[Problem, ...]:
    """Validator messages as problems on the first node each one quotes."""
    return tuple(
        (match.group(1) if (match := _QUOTED.search(text)) else "", text) for text in messages
    )


def shown(value: Any) -> str:
    """A field's value as the tree's JSON spells it: `true`, `false`, `3`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def change_text(change: NodeChange) -> str:
    """One node's change in a finding: `added`, or `field old -> new, moved p -> q`."""
    if change.kind is not ChangeKind.CHANGED:
        return f"{change.kind.value}"
    parts = [f"{field.field} {shown(field.old)} -> {shown(field.new)}" for field in change.fields]
    if change.moved:
        parts.append(f"moved {change.parent_before} -> {change.parent_after}")
    return ", ".join(parts)


def audit_to_json(report: AuditReport) -> dict[str, Any]:
    """The document of `runner audit --json` (schemas/views/audit.schema.json)."""
    return {
        "run_id": report.run_id,
        "clean": report.clean,
        "iterations": report.iterations,
        "operator_actions": json_form(report.operator_actions),
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
