"""The run branch as the parallel loop last left it: whatever moved it since was not the loop.

The loop commits only in its merge queue (or its one-slot steps), holding the run's lock, so a
head it did not make is the operator's, or another process's, and never a job's. `check` asks
runner_core.iteration.preconditions what such a change comes to: the operator's commits outside
`.runner/` are taken (each job's work is merged onto them as onto another job's, its guard run
again) and told once; anything else stops the loop with the line naming what moved and the way
back, the jobs' journals left for `runner recover`.
"""

from __future__ import annotations

import attrs

from runner_core.changes.import_rules import RUNNER_DIR
from runner_core.run.outside_change import GitHead, Refused, Where, outside_change
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo


@attrs.define
class BranchWatch:
    """The head the loop last made or took; `checkout` and `confined` word the lines."""

    repo: Repo
    head: GitHead
    checkout: str
    confined: bool

    def check(self, iteration: int) -> tuple[GitHead, str | None]:
        """The head to go on from, and the line telling the operator their commits were
        taken (None when nothing moved); UserFacingError when the change is refused."""
        where = Where(iteration, self.checkout, self.confined)
        change = outside_change(self.head, self.repo.branch_seen(self.head), where, RUNNER_DIR)
        if change is None:
            return self.head, None
        if isinstance(change, Refused):
            raise UserFacingError(change.line)
        self.head = change.onto
        return change.onto, change.merge_line

    def made(self) -> None:
        """The loop committed: the branch is where the loop left it."""
        self.head = self.repo.head()
