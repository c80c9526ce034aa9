"""A commit of a run branch as the audit reads it, and which kind of commit it is.

Decides the paths of the run's state files, the fields only the runner writes, and, from a
commit's subject, trailers and touched paths alone, whether the runner made it: a start, an
iteration, an operator's op, a `tell`/`answer` or a `config` commit; any other is a hand edit.
Never judges what a commit changed (the checks of each kind do), and never reads git: the shell
hands in each commit's facts (`CommitFacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from runner_core.run.trailers import (
    ACTOR,
    CONFIG,
    OP,
    DamagedTrailer,
    is_iteration_commit,
    parse_trailers,
)

# The tree's model and parser are imported where a commit's tree is read: telling a runner
# commit from its message (`runner validate`) builds no tree.
if TYPE_CHECKING:
    from runner_core.tree.model import Node

STATE_DIR = ".runner/state/"
TREE_PATH = STATE_DIR + "tree.json"
RUN_STATE_PATH = STATE_DIR + "run_state.json"
CONFIG_PATH = STATE_DIR + "config.toml"
QUESTIONS_PATH = STATE_DIR + "questions.md"
# What `runner tell` (and `tell --clear`) and `runner answer` commit: guidance, and the questions
# an answer closes. A commit touching only these and naming its actor is an operator's.
TELL_PATHS: frozenset[str] = frozenset({STATE_DIR + "guidance.md", QUESTIONS_PATH})
# The node fields only an iteration of the runner may change.
RUNNER_OWNED: tuple[str, ...] = ("passes", "attempts")


@attrs.frozen(slots=True)
class CommitFacts:
    """One commit of the run branch as the audit needs it.

    `tree_json`/`run_state_json` are the files' bytes after the commit (None when absent);
    `touched` the paths under `.runner/state/` the commit changed, relative to the repository;
    `outside` the first of those it changed outside `.runner/`.
    """

    sha: str
    message: str
    tree_json: bytes | None
    run_state_json: bytes | None
    touched: tuple[str, ...] = ()
    config_toml: bytes | None = None
    # Paths outside `.runner/` the commit changed (the first few: the audit names no more).
    outside: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


def tree_of(data: bytes | None) -> tuple[Node | None, str | None]:
    """The tree a commit's tree.json bytes hold, or why there is none, as a finding says it."""
    from runner_core.tree.serialization import TreeValidationError
    from runner_core.validation.loading import parse_tree

    if data is None:
        return None, "tree.json is missing"
    try:
        return parse_tree(data), None
    except TreeValidationError as error:
        return None, f"tree.json is not a valid tree: {error}"


def start_run_id(subject: str) -> str | None:
    """The run id of a start commit's subject, `chore(loop): start run <id>`."""
    prefix = "chore(loop): start run "
    return (
        subject[len(prefix) :]
        if subject.startswith(prefix) and len(subject) > len(prefix)
        else None
    )


def is_tell_commit(commit: CommitFacts, trailers: Mapping[str, str]) -> bool:
    """What `runner tell` commits: only TELL_PATHS, naming its actor. A Runner-Actor trailer
    on any other change is a hand edit's disguise, not an operator's commit."""
    return bool(commit.touched) and set(commit.touched) <= TELL_PATHS and ACTOR in trailers


def is_config_commit(commit: CommitFacts, trailers: Mapping[str, str]) -> bool:
    """What `runner config set|unset` commits: config.toml alone, naming its key and actor."""
    return set(commit.touched) == {CONFIG_PATH} and CONFIG in trailers and ACTOR in trailers


def is_runners_commit(commit: CommitFacts) -> bool:
    """Whether the runner made `commit`, by the rule audit.py's `_classify` sorts commits with:
    a start, iteration, operator, tell or config commit."""
    try:
        trailers = parse_trailers(commit.message)
    except DamagedTrailer:
        return False
    return (
        start_run_id(commit.subject) is not None
        or is_iteration_commit(trailers)
        or OP in trailers
        or is_tell_commit(commit, trailers)
        or is_config_commit(commit, trailers)
    )
