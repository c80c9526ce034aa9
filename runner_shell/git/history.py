"""The run branch's commits since `chore(loop): start run <id>`, as the audit's commit facts.

Three git processes whatever the run's length: `git log` lists the first-parent history's
shas and subjects, `git diff-tree --stdin` the paths each commit changed, and one
`git cat-file --batch` reads each commit's exact message with tree.json, run_state.json and
config.toml after it. A message may hold any byte, so nothing is parsed out of a formatted
log. Decides nothing about the commits (runner_core.history does).
"""

from __future__ import annotations

from pathlib import Path

from runner_core.audit.commit_facts import (
    CONFIG_PATH,
    RUN_STATE_PATH,
    STATE_DIR,
    TREE_PATH,
    CommitFacts,
    start_run_id,
)
from runner_shell.git.plumbing import git_bytes, read_objects
from runner_shell.git.repo import GitError


class NoStartCommit(Exception):
    """The branch holds no `chore(loop): start run <id>` commit for the run."""


def _since_start(root: Path, run_id: str, rev: str) -> list[str]:
    """The shas of the run's latest start commit and every first-parent commit after it."""
    out = git_bytes(root, ["log", "--reverse", "--first-parent", "--format=%H %s", rev, "--"])
    lines = out.decode("utf-8", "replace").split("\n")
    shas = [line[:40] for line in lines if line]
    starts = [index for index, line in enumerate(lines) if start_run_id(line[41:]) == run_id]
    if not starts:
        raise NoStartCommit(f"no commit 'chore(loop): start run {run_id}' on {rev}")
    return shas[starts[-1] :]


# How many paths outside `.runner/` a commit's facts keep: a finding names no more.
OUTSIDE_KEPT = 6


def _touched(
    root: Path, shas: list[str]
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The `.runner/state/` paths each commit changed against its first parent, and the first
    paths it changed outside `.runner/`."""
    out = git_bytes(
        root,
        [
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            "--root",
            "-m",
            "--first-parent",
        ],
        "".join(f"{sha}\n" for sha in shas).encode("ascii"),
    )
    touched: dict[str, list[str]] = {sha: [] for sha in shas}
    outside: dict[str, list[str]] = {sha: [] for sha in shas}
    current: str | None = None
    for token in out.decode("utf-8", "replace").split("\0"):
        # diff-tree names each commit it has changes for, then its paths.
        if token in touched:
            current = token
        elif current is not None and token.startswith(STATE_DIR):
            touched[current].append(token)
        elif (
            current is not None
            and token
            and not token.startswith(".runner/")
            and len(outside[current]) < OUTSIDE_KEPT
        ):
            outside[current].append(token)
    return (
        {sha: tuple(paths) for sha, paths in touched.items()},
        {sha: tuple(paths) for sha, paths in outside.items()},
    )


def _message(commit_object: bytes | None, sha: str) -> str:
    if commit_object is None:
        raise GitError(f"git cat-file: commit {sha} is missing")
    _, _, message = commit_object.partition(b"\n\n")
    return message.decode("utf-8", "replace")


def read_run_commits(
    root: Path, run_id: str, rev: str = "HEAD"
) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The start commit of `run_id` on `rev` and every commit after it, oldest first."""
    shas = _since_start(root, run_id, rev)
    touched, outside = _touched(root, shas)
    wanted = (TREE_PATH, RUN_STATE_PATH, CONFIG_PATH)
    names = [name for sha in shas for name in (sha, *(f"{sha}:{path}" for path in wanted))]
    objects = read_objects(root, names, kinds=(b"blob", b"commit"))
    facts = tuple(
        CommitFacts(
            sha,
            _message(objects[4 * index], sha),
            objects[4 * index + 1],
            objects[4 * index + 2],
            touched[sha],
            objects[4 * index + 3],
            outside[sha],
        )
        for index, sha in enumerate(shas)
    )
    return facts[0], facts[1:]


def tip_facts(root: Path, rev: str) -> CommitFacts | None:
    """`rev`'s commit with its message alone (no files, no paths touched), from one
    `git cat-file`; None when `rev` names no commit."""
    (found,) = read_objects(root, [rev], kinds=(b"commit",))
    return None if found is None else CommitFacts(rev, _message(found, rev), None, None)
