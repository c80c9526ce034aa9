"""A run's operator actions kept by a long-lived reader (`runner serve`): read whole once, then
only the commits its branch gained since, instead of walking the run's whole history (one
commit per iteration) at each change.

The actions stay as read while the branch's tip is the commit they were read at. A tip that
moved forward (the old tip a parent of a new commit) adds the new commits' actions, read with
the new tip by one `git log` (a step's commit costs one git process, not two); anything
else (a reset, a rewrite, a merge among the new commits, another run) reads them whole again,
as `operator_actions` does.
"""

from __future__ import annotations

import re

import attrs

from runner_core.run.identity import branch_for
from runner_core.run.operator_actions import OperatorAction, run_actions
from runner_core.run.trailers import OP as TRAILER_OP
from runner_shell.git.repo import Repo

# The line `git log --grep=^Runner-Op: ` matches, in a commit message.
_OPERATOR_LINE = re.compile(f"^{TRAILER_OP}: ", re.MULTILINE)


def operator_actions(repo: Repo, run_id: str | None) -> tuple[OperatorAction, ...]:
    """The run's operator commits, oldest first: from its branch, else from HEAD's history."""
    if run_id is None:
        return ()
    branch = branch_for(run_id)
    # The common case in one git process: the run's branch is there (a branch implies a commit).
    grep = f"--grep=^{TRAILER_OP}: "
    found = repo.git(
        "log", "--reverse", "-z", grep, "--format=%B", f"refs/heads/{branch}", "--", check=False
    )
    if found.returncode == 0:
        messages = tuple(message for message in found.stdout.split("\0") if message.strip())
        return run_actions(messages, run_id)
    ref = branch if repo.branch_exists(branch) else "HEAD"
    return run_actions(repo.messages(f"^{TRAILER_OP}: ", ref), run_id)


def _tip(repo: Repo, run_id: str) -> tuple[str, str] | None:
    """The ref `operator_actions` reads (the run's branch, else HEAD) and its commit, in one
    git call while the branch exists; None before the first commit."""
    for ref in (f"refs/heads/{branch_for(run_id)}", "HEAD"):
        found = repo.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if found.returncode == 0:
            return ref, found.stdout.strip()
    return None


@attrs.define
class OperatorLog:
    """The last reading's run, ref, tip and actions."""

    run_id: str | None = None
    ref: str | None = None
    tip: str | None = None
    actions: tuple[OperatorAction, ...] = ()
    folds: int = 0  # readings that read only the new commits, for the tests

    def read(self, repo: Repo, run_id: str | None) -> tuple[OperatorAction, ...]:
        if run_id is None:
            return ()
        branch = f"refs/heads/{branch_for(run_id)}"
        if (run_id, branch) == (self.run_id, self.ref) and self.tip is not None:
            grown = self._grown(repo, self.tip, branch)  # one git call for a step's commit
            if grown is not None:
                self.tip, gained = grown
                self.actions += run_actions(gained, run_id)
                self.folds += 1
                return self.actions
        tip = _tip(repo, run_id)
        if tip is None:
            return ()
        ref, sha = tip
        if (run_id, ref) == (self.run_id, self.ref) and self.tip is not None:
            if sha == self.tip:
                return self.actions
            added = self._new_messages(repo, self.tip, sha)
            if added is not None:
                self.actions += run_actions(added, run_id)
                self.tip, self.folds = sha, self.folds + 1
                return self.actions
        messages = repo.messages(f"^{TRAILER_OP}: ", sha)
        self.run_id, self.ref, self.tip = run_id, ref, sha
        self.actions = run_actions(messages, run_id)
        return self.actions

    @staticmethod
    def _grown(repo: Repo, old: str, ref: str) -> tuple[str, tuple[str, ...]] | None:
        """`ref`'s tip and the operator messages of the commits it gained beyond `old`, read by
        one git call; None when it gained none (unmoved, or moved elsewhere: `_tip` tells) or
        not through commits of one parent each."""
        found = repo.git("log", "-z", "--format=%H %P%n%B", f"{old}..{ref}", check=False)
        if found.returncode != 0 or not found.stdout:
            return None
        commits = [entry.split("\n", 1) for entry in found.stdout.split("\0") if entry]
        messages = OperatorLog._operator_messages(old, commits)
        return None if messages is None else (commits[0][0].split()[0], messages)

    @staticmethod
    def _new_messages(repo: Repo, old: str, new: str) -> tuple[str, ...] | None:
        """The operator messages of the commits `new` has beyond `old`, oldest first; None
        unless `new` descends from `old` through commits of one parent each."""
        found = repo.git("log", "-z", "--format=%H %P%n%B", f"{old}..{new}", check=False)
        if found.returncode != 0:
            return None
        commits = [entry.split("\n", 1) for entry in found.stdout.split("\0") if entry]
        return OperatorLog._operator_messages(old, commits)

    @staticmethod
    def _operator_messages(old: str, commits: list[list[str]]) -> tuple[str, ...] | None:
        """Of `git log`'s commits (newest first, each its `sha parents` line and message), the
        operator messages oldest first; None unless they descend from `old` one parent each."""
        parents = [line.split()[1:] for line, *_ in commits]
        if any(len(found) != 1 for found in parents) or [old] not in parents:
            return None
        messages = (body[0] if body else "" for _, *body in reversed(commits))
        return tuple(message for message in messages if _OPERATOR_LINE.search(message))
