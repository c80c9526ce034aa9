"""What the runner notices when an agent moved git under it (the agent is untrusted).

Decides whether HEAD or the run branch moved during the agent or guard, how that is worded
for the next attempt, where the agent's commits are kept, and which runner files are put back
right before the commit. Never runs git or touches files: the shell reads and restores.
"""

from __future__ import annotations

import attrs

from runner_core.run.identity import RunIdentityError, goal_run_id, with_run_id


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


# Runner files taken from the committed state at step start and put back immediately before
# the commit (paths relative to `.runner/`): a daemon the agent left that rewrites them after
# it exits changes nothing. GOAL.md is the user's except its id (restored_goal).
PROTECTED_FILES = (
    "state/config.toml",
    ".gitignore",
    "state/schema.json",
    "state/decomposer_output.schema.json",
    "state/executor_output.schema.json",
)


def restored_goal(text: str, run_id: str) -> str | None:
    """GOAL.md's text with its frontmatter id put back to `run_id`, or None if it holds it."""
    try:
        if goal_run_id(text) == run_id:
            return None
    except RunIdentityError:
        pass  # a broken id is replaced like a wrong one
    try:
        return with_run_id(text, run_id)
    except RunIdentityError:
        return None
