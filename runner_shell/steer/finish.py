"""`runner finish`: merge (or squash) a run's branch into the branch it started from.

Under the lock, on the run branch with a clean tree: gather the facts runner_core.run.finish
decides on (the start commit's Runner-Base, the tree, the history from the branch's commit
trailers, and what `git merge-tree` says would conflict, found without touching the work
tree), then commit the merged tree onto the target and check it out. Decides nothing itself.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from runner_core.run.finish import FinishFacts, finish_message, finish_refusal, finish_target
from runner_core.run.identity import branch_for
from runner_core.run.trailers import BASE, DamagedTrailer, parse_trailers
from runner_core.tree.selection import SelectionStatus, leaf_counts, select_leaf
from runner_shell.errors import UserFacingError
from runner_shell.git.history import NoStartCommit
from runner_shell.git.history_sources import run_commits, trailer_history
from runner_shell.git.repo import Repo, open_repo
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.step.runner import load_for_step
from runner_shell.store.layout import RunnerPaths


@attrs.frozen(slots=True)
class Finished:
    run_id: str
    target: str
    commit: str
    branch_deleted: bool
    already: bool = False  # finished before: nothing new was done


def _recorded_base(repo: Repo, run_id: str) -> str | None:
    try:
        start, _ = run_commits(repo, run_id)
        return parse_trailers(start.message).get(BASE)
    except (NoStartCommit, DamagedTrailer):
        return None


def _merged_tree(repo: Repo, target: str, branch: str) -> tuple[str, tuple[str, ...]]:
    """The tree a merge of `branch` into `target` makes, and the paths it conflicts in (then
    the tree is not used); computed in the object store, never in the work tree."""
    result = repo.git(
        "merge-tree", "--write-tree", "--name-only", "--no-messages", target, branch, check=False
    )
    tree, *names = result.stdout.splitlines() or [""]
    if result.returncode == 0:
        return tree, ()
    if result.returncode != 1:
        raise UserFacingError(f"finish: git merge-tree failed: {result.stderr.strip()}")
    return tree, tuple(sorted({name for name in names if name})) or ("(unknown paths)",)


def _facts(paths: RunnerPaths, repo: Repo, into: str | None) -> tuple[FinishFacts, str | None, str]:
    loaded = load_for_step(paths, repo)
    run_id = loaded.run_id
    recorded = _recorded_base(repo, run_id)
    target = finish_target(recorded, into)
    if target is not None and not repo.branch_exists(target):
        raise UserFacingError(f"finish: there is no branch '{target}' to merge into")
    passed, total = leaf_counts(loaded.tree)
    tree = ""
    conflicts: tuple[str, ...] = ()
    if target is not None:
        tree, conflicts = _merged_tree(repo, target, branch_for(run_id))
    facts = FinishFacts(
        run_id=run_id,
        complete=select_leaf(loaded.tree).status is SelectionStatus.COMPLETE,
        leaves_passed=passed,
        leaves_total=total,
        summary=trailer_history(repo, run_id).history.summary(),
        recorded_base=recorded,
        conflicts=conflicts,
    )
    return facts, target, tree


def _without_state(repo: Repo, tree: str, base: str) -> str:
    """`tree` with its `.runner/` replaced by the target's own (none: dropped)."""
    entries = [
        line
        for line in repo.git("ls-tree", "-z", tree).stdout.split("\0")
        if line and line.split("\t", 1)[1] != ".runner"
    ]
    kept = repo.git("ls-tree", "-z", base, "--", ".runner").stdout.split("\0")
    entries.extend(line for line in kept if line)
    from runner_shell.git.hardened import run_git

    made = run_git(("mktree", "-z"), repo.root, stdin=("\0".join(entries) + "\0").encode())
    if made.returncode != 0:
        raise UserFacingError(f"finish: git mktree failed: {made.stderr.decode().strip()}")
    return made.stdout.decode().strip()


def _audit_findings(repo: Repo, run_id: str) -> int:
    from runner_core.audit.audit import audit_run

    try:
        start, commits = run_commits(repo, run_id)
    except NoStartCommit as error:
        raise UserFacingError(f"finish: {error}") from None
    report = audit_run(run_id, start, commits)
    return 0 if report.clean else len(report.lines()) - 1


def _overwritten(stderr: str) -> str:
    """The paths a refused `git read-tree -m -u` names (`Entry 'x' not uptodate`, `Untracked
    working tree file 'x' would be overwritten`), as one sorted list."""
    names = {line.split("'")[1] for line in stderr.splitlines() if line.count("'") >= 2}
    return ", ".join(sorted(names)) or stderr.strip()


def _update_checkout(holder: Path, base: str, commit: str, target: str) -> None:
    """Bring the checkout that has `target` to `commit` as `git merge` would, index and work
    tree; refuses, changing nothing, when its local changes would be overwritten."""
    checkout = open_repo(holder)
    head = checkout.git("rev-parse", "HEAD").stdout.strip()
    if head != base:
        raise UserFacingError(f"finish: {holder} moved while finishing; run 'runner finish' again")
    checkout.git("update-index", "-q", "--refresh", check=False)
    result = checkout.git("read-tree", "-m", "-u", base, commit, check=False)
    if result.returncode != 0:
        raise UserFacingError(
            f"finish: your local changes in {holder} would be overwritten by the merge into "
            f"{target}: {_overwritten(result.stderr)}; commit or stash them, then run "
            "'runner finish' again (nothing was changed)"
        )


def already_finished(repo: Repo, run_id: str) -> Finished | None:
    from runner_shell.git.run_checkout import finish_record

    record = finish_record(repo, run_id)
    if record is None:
        return None
    gone = not repo.branch_exists(branch_for(run_id))
    return Finished(run_id, record["into"], record["commit"], gone, already=True)


def finish_run(
    paths: RunnerPaths,
    repo: Repo,
    into: str | None,
    squash: bool,
    delete: bool,
    force: bool,
    with_state: bool = False,
) -> Finished:
    """Merge or squash the run into its target like `git merge`; refuses before changing
    anything, and a finished run is finished only once."""
    from runner_shell.git.run_checkout import (
        finished_ref,
        run_checkout_path,
        worktrees,
        write_finish_record,
    )
    from runner_shell.store.state_files import load_run_state

    with exclusive_lock(repo):
        known = load_run_state(paths).run_id
        done = None if known is None else already_finished(repo, known)
        if done is not None:
            return done
        facts, target, tree = _checked(paths, repo, into, force)
        branch = branch_for(facts.run_id)
        base = repo.git("rev-parse", f"refs/heads/{target}").stdout.strip()
        head = repo.git("rev-parse", f"refs/heads/{branch}").stdout.strip()
        if not with_state:
            tree = _without_state(repo, tree, base)
        parents = (base,) if squash else (base, head)
        commit = repo.commit_tree(tree, parents, finish_message(facts, target, squash))
        held = worktrees(repo)
        holder = held.get(f"refs/heads/{target}")
        in_place = held.get(f"refs/heads/{branch}")
        own = run_checkout_path(repo, facts.run_id)
        if holder is not None:
            _update_checkout(holder, base, commit, target)
        # A compare-and-swap: a target that moved meanwhile is never overwritten.
        repo.git("update-ref", f"refs/heads/{target}", commit, base)
        repo.git("update-ref", finished_ref(facts.run_id), head)
        write_finish_record(repo, facts.run_id, target, commit)
        # The user worked on the run branch itself: their checkout goes to the target.
        if in_place is not None and in_place.resolve() != own.resolve() and holder is None:
            open_repo(in_place).git("checkout", "--quiet", target)
        _drop_run_checkout(repo, facts.run_id, branch if delete else None)
        return Finished(facts.run_id, target, commit, delete)


def _checked(
    paths: RunnerPaths, repo: Repo, into: str | None, force: bool
) -> tuple[FinishFacts, str, str]:
    """The run's facts, its target branch and its tree, once every refusal is passed (the
    audit's findings among them, unless `force`)."""
    facts, target, tree = _facts(paths, repo, into)
    refusal = finish_refusal(facts, target, force)
    if refusal is not None:
        raise UserFacingError(refusal)
    assert target is not None
    findings = 0 if force else _audit_findings(repo, facts.run_id)
    if findings:
        raise UserFacingError(
            f"finish: 'runner audit' has {findings} finding(s) on run {facts.run_id}; "
            "read them with 'runner audit', or pass --force"
        )
    return facts, target, tree


def _drop_run_checkout(repo: Repo, run_id: str, branch: str | None) -> None:
    """The run's own checkout goes (a later command reads the kept ref), and its `branch` too
    when given; git is asked from the common directory, since the checkout it stood in is gone."""
    from runner_shell.git.run_checkout import drop_run_checkout

    common = repo.common_path("").resolve()
    beside = Repo(common, common, common)
    drop_run_checkout(beside, run_id)
    if branch is not None:
        beside.git("branch", "--quiet", "-D", branch, check=False)
