"""What git moving under an iteration comes to: never the agent's fault.

Decides what a change of the run's checkout or branch made outside the runner during the agent
or guard comes to (the operator's, never charged to an attempt) and how it is worded: the
operator's commits kept, anything else refused with the way back. Never asks git itself.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class GitHead:
    """The checked-out branch (None when HEAD is detached) and HEAD's commit."""

    branch: str | None
    sha: str


@attrs.frozen(slots=True)
class BranchSeen:
    """The run's checkout and branch as the shell finds them after the agent and guard: the
    checkout's HEAD, the branch's commit (None: the branch is gone), whether the commit before
    is an ancestor of it, and the paths the commits between changed (when it is)."""

    head: GitHead
    tip: str | None
    forward: bool = False
    changed: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class Where:
    """What the lines about a change made outside the runner name: the iteration, the run's
    checkout, and whether the agent was confined away from the run's repository (only then
    is a commit on the run branch surely not the agent's)."""

    iteration: int
    checkout: str
    confined: bool


@attrs.frozen(slots=True)
class Adopted:
    """The operator's commits on the run branch, kept: the iteration is recorded on `onto` as
    interrupted (`error`), no attempt used, and `line` tells the operator once."""

    onto: GitHead
    error: str
    line: str
    merge_line: str = ""  # the line when a parallel loop's merge queue takes them instead


@attrs.frozen(slots=True)
class Refused:
    """A change the runner does not take (a reset, a rewrite, a switched checkout, a commit on
    the run's state): nothing is committed, no attempt used, `line` names what moved and the
    fix; the journal stays for `runner recover` once it is put back."""

    line: str


def outside_change(
    before: GitHead, seen: BranchSeen, where: Where, runner_dir: str
) -> Adopted | Refused | None:
    """What a change of the run's checkout or branch made outside the runner during the
    iteration comes to; None when nothing moved. The agent works in a scratch checkout of its
    own, so it is never the agent's: no attempt is ever charged for it. A commit on the run
    branch that only adds commits changing nothing under `runner_dir` is the operator's and
    kept (when the agent was confined); anything else is refused with the way back."""
    branch = before.branch
    if branch is None or (seen.head == before and seen.tip == before.sha):
        return None
    during = f"outside the runner during iteration {where.iteration}"
    nothing = "nothing was committed and no attempt used"
    recover = "then run 'runner recover'"
    if seen.head.branch != branch:
        now = seen.head.branch or f"a detached HEAD at {seen.head.sha[:12]}"
        return Refused(
            f"the run's checkout {where.checkout} was switched from {branch} to {now} {during}: "
            f"{nothing}; run 'git -C {where.checkout} checkout {branch}', {recover}"
        )
    if seen.tip is None:
        back = f"put it back with 'git update-ref refs/heads/{branch} {before.sha}'"
        return Refused(
            f"the run branch {branch} was deleted {during}: {nothing}; {back}, {recover}"
        )
    moved = f"the run branch {branch} moved from {before.sha[:12]} to {seen.tip[:12]} {during}"
    # The branch is checked out in the run's checkout: its files follow, local changes stay.
    back = f"put it back with 'git -C {where.checkout} reset --keep {before.sha}'"
    if not seen.forward:
        return Refused(
            f"{moved} (a reset or rewrite dropping the run's commits): {nothing}; {back}, {recover}"
        )
    state = [path for path in seen.changed if _under(path, runner_dir)]
    if state:
        return Refused(
            f"{moved} by commits changing the run's state ({state[0]}): {nothing}; {back}, "
            f"{recover}, and steer with 'runner node' or 'runner tell' instead"
        )
    if not where.confined:
        return Refused(
            f"{moved}, and the agent ran unsandboxed, so the commits may be its own: "
            f"{nothing}; {back}, {recover}, then merge {seen.tip[:12]} into {branch} if they "
            "are yours"
        )
    error = (
        f"interrupted: {moved} by commits outside {runner_dir}/, kept as the operator's; "
        "no attempt used, the leaf runs again on them"
    )
    kept = f"{moved} by commits outside {runner_dir}/: kept as yours"
    line = (
        f"{kept}, the iteration is recorded as interrupted on top of them and its leaf runs "
        "again (no attempt used)"
    )
    merge_line = (
        f"{kept}: the running jobs' work is merged onto them as onto each other's, their guards "
        "run again (no attempt used)"
    )
    return Adopted(GitHead(branch, seen.tip), error, line, merge_line)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(f"{directory}/")


def carried_error(error: str, conflicts: tuple[str, ...]) -> str:
    """The adopted iteration's error, naming the agent's changes the operator's commits also
    changed, which are left out of its commit (the others are kept)."""
    if not conflicts:
        return error
    shown = ", ".join(conflicts[:5]) + (
        f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
    )
    return f"{error}; the agent's changes to {shown} were left out (the commits changed them too)"
