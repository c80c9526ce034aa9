"""`runner validate`'s warnings: the runner-owned fields a commit the runner did not make
changed in the run's committed tree (runner_core.audit.hand_edits decides them).

Usually the run branch's last commit is the runner's by its message alone (a start, iteration
or operator commit), and then it left the tree as it is: one `git cat-file` says so, and
neither the branch's commits, their trees nor the audit's rules are read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from runner_core.audit.commit_facts import is_runners_commit
from runner_core.run.identity import branch_for
from runner_shell.git.history import NoStartCommit, tip_facts
from runner_shell.git.repo import GitError, Repo


def warn_hand_edits(repo: Repo, run_id: str, emit: Callable[[str], None] | None = None) -> None:
    """One line each on stderr (or to `emit`); never changes validate's exit code."""
    try:
        tip = tip_facts(repo.root, f"refs/heads/{branch_for(run_id)}")
        if tip is not None and is_runners_commit(tip):
            return
        from runner_core.audit.hand_edits import owned_field_warnings
        from runner_shell.git.history_sources import run_commits

        start, commits = run_commits(repo, run_id)
    except (NoStartCommit, GitError):
        return
    for line in owned_field_warnings(start, commits):
        (emit or _stderr)(f"runner: warning: {line}")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
