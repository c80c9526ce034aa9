"""A run's branch: `runner/<run id>`.

Apart from `identity` (whose GOAL.md frontmatter is an attrs class) so that finding the run a
command works in imports no attrs.
"""

from __future__ import annotations

BRANCH_PREFIX = "runner/"
# The variable that picks the run a command works on (`runner --run ID`): the operator's, never
# passed on to an agent or a guard (runner_core.run.environment).
RUN_SELECTOR = "RUNNER_RUN"


def branch_for(run_id: str) -> str:
    return BRANCH_PREFIX + run_id
