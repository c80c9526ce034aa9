"""Where a run's files are: its own checkout inside `.git/runner/`, never the user's.

A run's branch `runner/<id>` is checked out in a linked worktree the runner keeps at
`.git/runner/runs/<id>/checkout`; every command started from the user's checkout (on any
branch, with any local changes) or from any linked worktree works there. A checkout that
has the run's branch checked out itself (the user chose to) is used in place. `--run ID`
(the `RUNNER_RUN` variable) picks a run; the only active run is the default. A finished
run (`refs/runner/finished/<id>`) is read from a detached checkout of that ref.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from runner_core.run.branches import BRANCH_PREFIX, RUN_SELECTOR, branch_for
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo, open_repo
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import RunnerPaths

RUN_ENV = RUN_SELECTOR  # the operator's, never passed on to an agent or a guard
FINISHED_PREFIX = "refs/runner/finished/"


def run_home(repo: Repo, run_id: str) -> Path:
    """The runner's directory of one run, in the common git directory."""
    return repo.common_path(f"runner/runs/{run_id}")


def run_checkout_path(repo: Repo, run_id: str) -> Path:
    return run_home(repo, run_id) / "checkout"


def finished_ref(run_id: str) -> str:
    return f"{FINISHED_PREFIX}{run_id}"


def worktrees(repo: Repo) -> dict[str, Path]:
    """Each checked-out branch (refs/heads/...) and the worktree that has it."""
    out = repo.git("worktree", "list", "--porcelain").stdout
    found: dict[str, Path] = {}
    current: Path | None = None
    for line in out.splitlines():
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line.startswith("branch ") and current is not None:
            found[line.removeprefix("branch ")] = current
    return found


def finished_runs(repo: Repo) -> tuple[str, ...]:
    out = repo.git("for-each-ref", "--format=%(refname)", FINISHED_PREFIX).stdout
    return tuple(sorted(line.removeprefix(FINISHED_PREFIX) for line in out.splitlines() if line))


def active_runs(repo: Repo) -> tuple[str, ...]:
    """Runs with a branch that were not finished."""
    done = set(finished_runs(repo))
    return tuple(
        name.removeprefix(BRANCH_PREFIX)
        for name in repo.branches(BRANCH_PREFIX)
        if name.removeprefix(BRANCH_PREFIX) not in done
    )


def finish_record(repo: Repo, run_id: str) -> dict[str, str] | None:
    """`{"into": branch, "commit": sha}` of a finished run, or None."""
    path = run_home(repo, run_id) / "finished.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {str(key): str(value) for key, value in data.items()}


def write_finish_record(repo: Repo, run_id: str, into: str, commit: str) -> None:
    home = run_home(repo, run_id)
    home.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"commit": commit, "into": into}, sort_keys=True) + "\n"
    atomic_write_text(home / "finished.json", text)


def ensure_run_checkout(repo: Repo, run_id: str) -> Path:
    """The worktree that has `runner/<id>` checked out; the runner's own one when none has."""
    branch = branch_for(run_id)
    holder = worktrees(repo).get(f"refs/heads/{branch}")
    if holder is not None:
        return holder
    path = run_checkout_path(repo, run_id)
    repo.git("worktree", "prune")
    if path.exists():
        repo.git("worktree", "remove", "--force", str(path), check=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    if repo.branch_exists(branch):
        added = repo.git("worktree", "add", "--quiet", str(path), branch, check=False)
        if added.returncode != 0:
            # A worktree in the middle of a rebase of the branch holds it without listing it.
            held = re.search(r"(?:checked out|used by worktree) at '(.+)'", added.stderr)
            if held is None:
                raise UserFacingError(f"git worktree add failed: {added.stderr.strip()}")
            return Path(held[1])
    else:  # finished and deleted: read it from its kept ref
        repo.git("worktree", "add", "--quiet", "--detach", str(path), finished_ref(run_id))
    return path


def drop_run_checkout(repo: Repo, run_id: str) -> None:
    """Remove the runner's own checkout of a run (never a worktree the user made)."""
    path = run_checkout_path(repo, run_id)
    if path.exists():
        repo.git("worktree", "remove", "--force", str(path), check=False)
    repo.git("worktree", "prune", check=False)


def _wanted_run(repo: Repo) -> str | None:
    wanted = os.environ.get(RUN_ENV) or None
    if wanted is not None:
        known = set(active_runs(repo)) | set(finished_runs(repo))
        if wanted not in known:
            raise UserFacingError(f"--run {wanted}: there is no such run (see 'runner runs')")
        return wanted
    active = active_runs(repo)
    if len(active) > 1:
        raise UserFacingError(
            f"several runs are active ({', '.join(active)}); pick one with 'runner --run ID ...'"
        )
    if active:
        return active[0]
    finished = finished_runs(repo)
    if not finished:
        return None
    # The one finished last is the default once none is active.
    return max(finished, key=lambda run_id: _finished_at(repo, run_id))


def _finished_at(repo: Repo, run_id: str) -> float:
    try:
        return (run_home(repo, run_id) / "finished.json").stat().st_mtime
    except OSError:
        return 0.0


def locate_run(start: Path) -> tuple[RunnerPaths, Repo]:
    """The paths and repository a run command works in, from wherever it was started."""
    repo = open_repo(start)
    branch = repo.current_branch()
    wanted = os.environ.get(RUN_ENV) or None
    on_run_branch = branch is not None and branch.startswith(BRANCH_PREFIX)
    if on_run_branch and (wanted is None or branch == branch_for(wanted)):
        return RunnerPaths(repo.root), repo
    if _is_run_checkout(repo):
        return RunnerPaths(repo.root), repo
    run_id = _wanted_run(repo)
    if run_id is None:
        return RunnerPaths(repo.root), repo  # a draft, or nothing yet: the checkout itself
    root = ensure_run_checkout(repo, run_id)
    run_repo = open_repo(root)
    return RunnerPaths(run_repo.root), run_repo


def _is_run_checkout(repo: Repo) -> bool:
    runs = repo.common_path("runner/runs").resolve()
    return repo.root.resolve().is_relative_to(runs) and os.environ.get(RUN_ENV) is None
