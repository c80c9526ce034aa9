"""`runner finish`: merge (or squash) a run's branch into the branch it started from.

Under the lock, on the run branch with a clean tree: gather the facts runner_core.run.finish
decides on (the start commit's Runner-Base, the tree, the history from the branch's commit
trailers, and what `git merge-tree` says would conflict, found without touching the work
tree), then commit the merged tree onto the target and check it out. Decides nothing itself.
"""

from __future__ import annotations

import attrs

from runner_core.run.finish import FinishFacts, finish_message, finish_refusal, finish_target
from runner_core.run.identity import branch_for
from runner_core.run.trailers import BASE, DamagedTrailer, parse_trailers
from runner_core.tree.selection import SelectionStatus, select_leaf
from runner_core.views.status import leaf_counts
from runner_shell.errors import UserFacingError
from runner_shell.git.history import NoStartCommit
from runner_shell.git.repo import Repo
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.step.runner import load_for_step
from runner_shell.store.history_sources import run_commits, trailer_history
from runner_shell.store.layout import RunnerPaths


@attrs.frozen(slots=True)
class Finished:
    run_id: str
    target: str
    commit: str
    branch_deleted: bool


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


def finish_run(
    paths: RunnerPaths, repo: Repo, into: str | None, squash: bool, delete: bool, force: bool
) -> Finished:
    """Merge or squash the run into its target and commit; refuses before changing anything."""
    with exclusive_lock(repo):
        facts, target, tree = _facts(paths, repo, into)
        refusal = finish_refusal(facts, target, force)
        if refusal is not None:
            raise UserFacingError(refusal)
        assert target is not None
        branch = branch_for(facts.run_id)
        base, head = repo.git("rev-parse", target).stdout.strip(), repo.head_sha()
        # The commit is made and the target moved in one compare-and-swap; only then is the
        # work tree switched, so a failure before leaves every branch as it was.
        parents = (base,) if squash else (base, head)
        commit = repo.commit_tree(tree, parents, finish_message(facts, target, squash))
        repo.git("update-ref", f"refs/heads/{target}", commit, base)
        repo.git("checkout", "--quiet", target)
        if delete:
            repo.git("branch", "--quiet", "-D", branch)
        return Finished(facts.run_id, target, commit, delete)
