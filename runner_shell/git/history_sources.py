"""Where a run's history is read from: its iteration directories, else the archive ref, else the
commit trailers of its branch (every view works from git alone).

Reads; never writes and never decides what a record means (runner_core.history.records and
runner_core.run.trailers do). The source used is returned so the views can say it in one warning
line when it is not the directory.
"""

from __future__ import annotations

import json

import attrs

from runner_core.audit.commit_facts import CommitFacts
from runner_core.history.records import (
    DamagedRecord,
    ExecutionHistory,
    ExecutionRecord,
    record_from_meta,
)
from runner_core.history.sources import iteration_ranges, merged_history, missing_iterations
from runner_core.run.identity import branch_for
from runner_core.run.trailers import (
    ITER,
    DamagedTrailer,
    is_iteration_commit,
    parse_trailers,
    record_from_trailers,
)
from runner_shell.git.repo import GitError, Repo
from runner_shell.store.iteration_log import iteration_dirs
from runner_shell.store.layout import RunnerPaths


@attrs.frozen(slots=True)
class SourcedHistory:
    """A run's history, the lines of what was skipped, and the warning naming its source
    (None when it is the iteration directories)."""

    history: ExecutionHistory
    problems: tuple[str, ...]
    warning: str | None = None


def run_rev(repo: Repo, run_id: str) -> str:
    """The run's branch when it exists, else the ref `runner finish` kept, else HEAD."""
    branch = branch_for(run_id)
    if repo.branch_exists(branch):
        return branch
    kept = f"refs/runner/finished/{run_id}"
    found = repo.git("rev-parse", "--verify", "--quiet", kept, check=False)
    return kept if found.returncode == 0 else "HEAD"


def archived_history(paths: RunnerPaths, run_id: str) -> SourcedHistory | None:
    """The history the archive's meta.json files give; None when the run has no archive."""
    from runner_shell.git.log_archive import ArchiveError, archived_dir, logs_ref, read_archived

    try:
        found = read_archived(paths.root, run_id, frozenset({"meta.json"}))
    except (ArchiveError, GitError) as error:
        return SourcedHistory(ExecutionHistory(), (str(error),))
    if found is None:
        return None
    records: list[ExecutionRecord] = []
    problems: list[str] = []
    for (number, _), data in sorted(found.items()):
        where = f"{logs_ref(run_id)}:{archived_dir(number)}/meta.json"
        try:
            record = record_from_meta(json.loads(data.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as error:
            reason = str(error) if isinstance(error, DamagedRecord) else f"unreadable: {error}"
            problems.append(f"{where}: {reason}")
            continue
        if record.iteration != number or record.run_id != run_id:
            problems.append(f"{where}: names run {record.run_id} iter {record.iteration}")
            continue
        records.append(record)
    return SourcedHistory(ExecutionHistory.of(records), tuple(problems))


def run_commits(repo: Repo, run_id: str) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The run's start commit and every later commit of its branch (UserFacingError-free:
    `NoStartCommit` when the branch holds no start commit)."""
    from runner_shell.git.history import read_run_commits

    return read_run_commits(repo.root, run_id, run_rev(repo, run_id))


def trailer_history(repo: Repo, run_id: str) -> SourcedHistory:
    """The history the iteration commits' trailers give, from git alone."""
    from runner_shell.git.history import NoStartCommit

    try:
        _, commits = run_commits(repo, run_id)
    except NoStartCommit as error:
        return SourcedHistory(ExecutionHistory(), (str(error),))
    records: list[ExecutionRecord] = []
    problems: list[str] = []
    for commit in commits:
        try:
            trailers = parse_trailers(commit.message)
            if not is_iteration_commit(trailers):
                continue
            record = record_from_trailers(trailers)
        except DamagedTrailer as error:
            problems.append(f"commit {commit.sha[:8]}: {error}")
            continue
        if record.run_id == run_id:
            records.append(record)
    return SourcedHistory(ExecutionHistory.of(records), tuple(problems))


def fallback_history(paths: RunnerPaths, repo: Repo, run_id: str) -> SourcedHistory | None:
    """The history from git when the run's iteration directories are gone; None when they
    are there."""
    from runner_shell.git.log_archive import logs_ref

    if iteration_dirs(paths, run_id):
        return None
    run_dir = paths.relative(paths.run_dir(run_id))
    archived = archived_history(paths, run_id)
    if archived is not None:
        return attrs.evolve(
            archived,
            warning=f"{run_dir}/ is missing: read the run from {logs_ref(run_id)} "
            "('runner logs restore' re-creates the directory)",
        )
    return attrs.evolve(
        trailer_history(repo, run_id),
        warning=f"{run_dir}/ and {logs_ref(run_id)} are missing: read the run from its commit "
        "trailers, without logs (fetch 'refs/runner/*' to get them)",
    )


def fill_missing(
    paths: RunnerPaths, repo: Repo, run_id: str, next_iter: int, local: ExecutionHistory
) -> SourcedHistory:
    """`local` (what the iteration directories hold) with every iteration before `next_iter`
    it lacks taken from the archive ref, else the commit trailers, so a clone holding only some
    directories never undercounts; the warning says where the missing ones were read from."""
    missing = missing_iterations(local, run_id, next_iter)
    if not missing:
        return SourcedHistory(local, ())
    from runner_shell.git.log_archive import logs_ref  # only a run lacking iterations needs git's

    run_dir = paths.relative(paths.run_dir(run_id))
    lacking = f"{run_dir}/ lacks iterations {iteration_ranges(missing)}"
    archived = archived_history(paths, run_id)
    if archived is not None:
        merged = merged_history(local.records, archived.history.records)
        if not missing_iterations(merged, run_id, next_iter):
            warning = f"{lacking}: read them from {logs_ref(run_id)}"
            return SourcedHistory(merged, archived.problems, warning)
    trailers = trailer_history(repo, run_id)
    earlier = () if archived is None else archived.history.records
    return SourcedHistory(
        merged_history(local.records, earlier, trailers.history.records),
        trailers.problems,
        f"{lacking}: read them from their commit trailers, without logs "
        "(fetch 'refs/runner/*' to get them)",
    )


def iteration_commit(commits: tuple[CommitFacts, ...], iteration: int) -> CommitFacts | None:
    """The last commit of the run recording `iteration`."""
    for commit in reversed(commits):
        try:
            trailers = parse_trailers(commit.message)
        except DamagedTrailer:
            continue
        if trailers.get(ITER) == str(iteration):
            return commit
    return None


def agent_diff_stat(repo: Repo, sha: str) -> tuple[str, ...]:
    """`git diff --stat` of what a commit changed outside `.runner/`: the agent's work."""
    out = repo.git("diff", "--stat", f"{sha}^", sha, "--", ".", ":(exclude).runner").stdout
    return tuple(line.strip() for line in out.splitlines() if line.strip())
