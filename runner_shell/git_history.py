"""The run branch's commits since `chore(loop): start run <id>`, as the audit's commit facts.

One `git log` lists every commit's sha, message and changed paths; one `git cat-file --batch`
reads tree.json and run_state.json after each. Decides nothing about them (runner_core.audit).
"""

from __future__ import annotations

from pathlib import Path

from runner_core.audit import RUN_STATE_PATH, STATE_DIR, TREE_PATH, CommitFacts, start_run_id
from runner_shell.git_plumbing import git_bytes, read_blobs

# Separators git never writes into a sha or a path list and runner messages never hold.
_RECORD, _FIELD = "\x1e", "\x1f"


class NoStartCommit(Exception):
    """The branch holds no `chore(loop): start run <id>` commit for the run."""


def _logged_commits(root: Path, rev: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(sha, message, changed state paths) of `rev`'s first-parent history, oldest first."""
    out = git_bytes(
        root,
        [
            "log",
            "--reverse",
            "--first-parent",
            "--diff-merges=first-parent",
            "--no-renames",
            "--name-only",
            "-z",
            f"--format={_RECORD}%H{_FIELD}%B{_FIELD}",
            rev,
            "--",
        ],
    ).decode("utf-8", "replace")
    commits = []
    for record in out.split(_RECORD)[1:]:
        sha, message, names = record.split(_FIELD, 2)
        touched = tuple(
            name for name in names.split("\0") if name.strip("\n").startswith(STATE_DIR)
        )
        commits.append((sha, message, tuple(name.strip("\n") for name in touched)))
    return commits


def read_run_commits(
    root: Path, run_id: str, rev: str = "HEAD"
) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The start commit of `run_id` on `rev` and every commit after it, oldest first."""
    logged = _logged_commits(root, rev)
    starts = [
        index
        for index, (_, message, _) in enumerate(logged)
        if start_run_id(message.split("\n", 1)[0]) == run_id
    ]
    if not starts:
        raise NoStartCommit(f"no commit 'chore(loop): start run {run_id}' on {rev}")
    since = logged[starts[-1] :]
    names = [f"{sha}:{path}" for sha, _, _ in since for path in (TREE_PATH, RUN_STATE_PATH)]
    blobs = read_blobs(root, names)
    facts = tuple(
        CommitFacts(sha, message, blobs[2 * index], blobs[2 * index + 1], touched)
        for index, (sha, message, touched) in enumerate(since)
    )
    return facts[0], facts[1:]
