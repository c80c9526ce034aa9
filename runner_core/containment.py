"""What the runner notices when an agent moved git under it (issue 10: the agent is untrusted).

Decides whether HEAD or the run branch moved during the agent or guard, how that is worded
for the next attempt, and where the agent's commits are kept. Never runs git or touches files:
the shell reads HEAD and carries out the restore.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class GitHead:
    """The checked-out branch (None when HEAD is detached) and HEAD's commit."""

    branch: str | None
    sha: str


RESCUE_PREFIX = "refs/runner/rescued"


def rescue_ref(run_id: str, iteration: int) -> str:
    """Where the commit HEAD was left at is kept for inspection when the agent moved it."""
    return f"{RESCUE_PREFIX}/{run_id}/{iteration}"


def head_moved_problem(before: GitHead, after: GitHead) -> str | None:
    """One line saying how HEAD moved between `before` and `after`, or None if it did not."""
    if after == before:
        return None
    if after.branch is None:
        return f"the agent detached HEAD (at {after.sha[:12]}) from branch {before.branch}"
    if after.branch != before.branch:
        return f"the agent switched from branch {before.branch} to {after.branch}"
    return (
        f"the agent moved branch {before.branch} from {before.sha[:12]} to {after.sha[:12]} "
        "(reset, commit or rebase)"
    )
