"""`runner finish`: whether a run may be merged into the branch it started from, and the
message that merge says.

Decides which branch the run goes into (the `Runner-Base` its start commit records, unless
the operator names one), whether finishing is refused (an incomplete run without `--force`,
no known target, a target that conflicts), and the merge commit's message: nodes done,
iterations and cost. Never runs git; the shell gathers the facts and carries out the merge.
"""

from __future__ import annotations

import attrs

from runner_core.history.records import HistorySummary
from runner_core.run.identity import branch_for
from runner_core.run.trailers import BASE, RUN, render_trailers


@attrs.frozen(slots=True)
class FinishFacts:
    """What the shell found before finishing: the run, its tree's leaves, its history, where
    it started, and whether the target branch merges with it cleanly."""

    run_id: str
    complete: bool
    leaves_passed: int
    leaves_total: int
    summary: HistorySummary
    recorded_base: str | None
    conflicts: tuple[str, ...] = ()


def finish_target(recorded_base: str | None, into: str | None) -> str | None:
    """The branch the run is merged into: `--into`, else the one `runner start` recorded."""
    return into if into is not None else recorded_base


def finish_refusal(facts: FinishFacts, target: str | None, force: bool) -> str | None:
    """Why `runner finish` does nothing, as one line; None when it may go ahead."""
    if target is None:
        return f"finish: run {facts.run_id} records no branch it started from (pass --into BRANCH)"
    if target == branch_for(facts.run_id):
        return f"finish: --into {target} is the run's own branch; name the branch to merge into"
    if not facts.complete and not force:
        return (
            f"finish: run {facts.run_id} is not complete ({facts.leaves_passed}/"
            f"{facts.leaves_total} leaves passed); run 'runner loop', or pass --force"
        )
    if facts.conflicts:
        shown = ", ".join(facts.conflicts[:5]) + (" ..." if len(facts.conflicts) > 5 else "")
        return (
            f"finish: {target} has diverged and conflicts with {branch_for(facts.run_id)} in "
            f"{shown}; merge or rebase by hand (nothing was changed)"
        )
    return None


def _cost_text(summary: HistorySummary) -> str:
    cost = summary.total_cost_usd
    return "unknown" if cost is None else f"${cost:.2f}"


def finish_message(facts: FinishFacts, target: str, squash: bool) -> str:
    """The merge (or squash) commit's message: what the run did, then its trailers."""
    verb = "squash" if squash else "merge"
    state = "complete" if facts.complete else "incomplete (finished with --force)"
    body = (
        f"Run {facts.run_id} is {state}: {facts.leaves_passed}/{facts.leaves_total} leaves "
        f"passed in {facts.summary.total_executions} iterations, cost {_cost_text(facts.summary)}."
    )
    trailers = render_trailers(((RUN, facts.run_id),))
    return f"chore(runner): {verb} run {facts.run_id} into {target}\n\n{body}\n\n{trailers}"


def start_message(run_id: str, base: str | None) -> str:
    """`chore(loop): start run <id>`, recording the branch the run started from when known."""
    subject = f"chore(loop): start run {run_id}"
    if base is None:
        return subject
    return f"{subject}\n\n{render_trailers(((BASE, base),))}"
