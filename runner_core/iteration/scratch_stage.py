"""The iteration's import stage: after the agent and guard, list the scratch checkout and let
the import rules decide what the commit takes.

Decides how an import decision changes the iteration (the effect is effects.ListScratch,
its result results.ScratchListed): an import the rules refuse, or an executor's change to a
protected path, is the agent's error (the guard's verdict no longer counts, the previous tree is
kept and nothing of the scratch tree is imported); a runner error already found wins, keeping
every attempt. Never lists a file: the shell's ScratchPort does.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner_core.guard.protected import protected_changes
from runner_core.iteration.import_rules import NAMED_PROBLEMS, ImportDecision
from runner_core.iteration.plan import Review
from runner_core.tree.model import AgentStatus


def refused_review(decision: ImportDecision) -> Review | None:
    """The review an iteration ends with when the rules refused the import, else None."""
    if decision.agent_error is None:
        return None
    return Review(AgentStatus.RETRY, "", None, decision.agent_error)


def guarded_import(
    decision: ImportDecision, protected: Sequence[str], acceptance_before: Sequence[str]
) -> ImportDecision:
    """An executor's import, refused when it changes a protected path its node does not allow
    (`[guard] protected`, `may-edit:`): a weakened test is never taken into the run."""
    if decision.agent_error is not None or not protected:
        return decision
    lines = protected_changes(
        (change.path for change in decision.changes), protected, acceptance_before
    )
    if not lines:
        return decision
    more = len(lines) - NAMED_PROBLEMS
    error = "; ".join(lines[:NAMED_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return ImportDecision(
        discarded=decision.discarded, agent_error=error, set_aside=decision.changes
    )


def import_note(decision: ImportDecision) -> str | None:
    """The iteration log's note of the runner-owned files the agent changed (not imported)."""
    if not decision.discarded:
        return None
    lines = "".join(f"{path}\n" for path in decision.discarded)
    return f"runner-owned files the agent changed were not imported:\n{lines}"
