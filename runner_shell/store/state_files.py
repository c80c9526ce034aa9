"""Reading and writing the runner-owned files of `.runner/` with clear, one-line errors.

Every read names the file and what is wrong with it; every write is atomic and canonical.
The content rules (schema, invariants, config values) are runner_core's; this only moves bytes.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from runner_core.json_text import toml_value
from runner_core.tree.bounds import TREE_MAX_BYTES as CORE_TREE_MAX_BYTES
from runner_shell.errors import UserFacingError
from runner_shell.store.files import (
    FileTooLarge,
    NotRegularFile,
    atomic_write_text,
    open_regular,
    read_bytes_capped,
)
from runner_shell.store.layout import Places

# hashlib and the wording of identity and missing-file problems are imported where
# used: `runner select` and the views read none of them, and each import is start-up they pay.
# The tree's model and parser too: `runner select` and `validate` ask runner_core.tree.plain,
# which builds no `Node` (and imports no attrs), unless it cannot answer.
if TYPE_CHECKING:  # imported where read: `runner select` reads neither the config nor the state
    from runner_core.iteration.preconditions import RepoFacts
    from runner_core.run.config import Config
    from runner_core.run.state import RunState
    from runner_core.tree.model import Node
    from runner_core.tree.plain import PlainNode, PlainTree

# Larger state files are refused instead of exhausting memory. The tree's limit is the core's:
# the runner never writes a tree it could not read back.
TREE_MAX_BYTES = CORE_TREE_MAX_BYTES
SMALL_FILE_MAX_BYTES = 16 * 1024 * 1024

_Read = TypeVar("_Read")


def collector_paused(read: Callable[[], _Read]) -> _Read:
    """`read()` with the cyclic garbage collector paused. Decoding a tree allocates a container
    per node and none of them is part of a cycle, yet every few hundred allocations set off a
    collection that walks them all again, with every module imported so far: a fifth of the
    time `runner validate` spends reading a 10,000-node tree."""
    if not gc.isenabled():
        return read()
    gc.disable()
    try:
        return read()
    finally:
        gc.enable()


class MissingStateFile(UserFacingError):
    """A runner file that is not there; `failure_of` words the hint once it has asked git."""

    def __init__(self, name: str) -> None:
        from runner_core.iteration.preconditions import missing_state_file_problem

        super().__init__(missing_state_file_problem(name, in_head=False))
        self.name = name


def canonical_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _read(paths: Places, path: Path, limit: int, fixes: bool = True) -> bytes:
    """`path`'s bytes; a problem ends in its fix unless `fixes` is false (a file the agent left
    in its scratch checkout, which the runner resets: no fix is the operator's to make)."""
    name = paths.relative(path)
    try:
        return read_bytes_capped(path, limit)
    except FileNotFoundError:
        if not fixes:
            raise UserFacingError(f"{name} is missing") from None
        raise MissingStateFile(name) from None
    except NotRegularFile as error:  # a directory too: open_regular opens it, then refuses it
        fix = f" (restore it with 'git checkout -- {name}')" if fixes else ""
        raise UserFacingError(f"{name} {error.strerror}{fix}") from None
    except FileTooLarge as error:
        fix = " (make it smaller)" if fixes else ""
        raise UserFacingError(
            f"{name} is {error.size} bytes; at most {error.limit} are read{fix}"
        ) from None
    except OSError as error:
        raise UserFacingError(f"{name} cannot be read: {error.strerror or error}") from None


def _read_text(paths: Places, path: Path, limit: int = SMALL_FILE_MAX_BYTES) -> str:
    data = _read(paths, path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserFacingError(
            f"{paths.relative(path)} is not UTF-8 (byte {error.start}: {error.reason})"
        ) from None


def read_tree_bytes(paths: Places, fixes: bool = True) -> bytes:
    return _read(paths, paths.tree, TREE_MAX_BYTES, fixes)


def load_tree(paths: Places) -> Node:
    return _parsed_tree(paths, read_tree_bytes(paths))


def read_tree_answer(paths: Places) -> PlainTree:
    """Whether the tree file is valid and its next leaf, read without building the tree
    (runner_core.tree.plain); when that cannot answer, from the parsed tree, or the one-line
    error `load_tree` raises."""
    from runner_core.tree.plain import read_plain_tree

    data = read_tree_bytes(paths)
    answer = collector_paused(lambda: read_plain_tree(data))
    if answer is None:
        from runner_core.tree.selection import plain_answer

        answer = plain_answer(_parsed_tree(paths, data))
    return answer


def read_plain_root_of(paths: Places) -> PlainNode | None:
    """The tree file's root as runner_core.tree.plain decodes it (a tuple a node, nothing
    built), or None where that cannot say the tree is valid (`load_tree` then says why)."""
    from runner_core.tree.plain import read_plain_root

    data = read_tree_bytes(paths)
    read = collector_paused(lambda: read_plain_root(data))
    return None if read is None else read[0]


def load_tree_and_sha256(paths: Places) -> tuple[Node, str]:
    """The tree and the SHA-256 of the very bytes it was parsed from (a step's: the views and
    `select` call `load_tree`, which hashes nothing)."""
    import hashlib

    data = read_tree_bytes(paths)
    return _parsed_tree(paths, data), hashlib.sha256(data).hexdigest()


def _parsed_tree(paths: Places, data: bytes) -> Node:
    from runner_core.tree.serialization import TreeValidationError
    from runner_core.validation.loading import parse_tree

    try:
        return collector_paused(lambda: parse_tree(data))
    except TreeValidationError as error:
        raise UserFacingError(f"{paths.relative(paths.tree)}: {error}") from None


def read_bytes(path: Path, limit: int = SMALL_FILE_MAX_BYTES) -> bytes:
    """A small runner-owned file's bytes; OSError (FileTooLarge included) when unreadable."""
    return read_bytes_capped(path, limit)


def write_tree(paths: Places, tree: Node) -> None:
    from runner_core.tree.serialization import dumps_tree

    atomic_write_text(paths.tree, dumps_tree(tree))


def load_config(paths: Places) -> Config:
    from runner_core.run.config import ConfigError, parse_config

    data = load_config_table(paths)
    try:
        return parse_config(data)
    except ConfigError as error:
        raise UserFacingError(f"{paths.relative(paths.config)}: {error}") from None


def load_config_table(paths: Places) -> dict[str, Any]:
    """config.toml as the TOML table it holds, not yet checked against the config's rules."""
    text, name = _read_text(paths, paths.config), paths.relative(paths.config)
    try:
        return toml_value(text)
    except ValueError as error:  # tomllib's TOMLDecodeError, or TooDeep
        raise UserFacingError(f"{name} is not valid TOML: {error}") from None


def load_run_state(paths: Places) -> RunState:
    from runner_core.run.state import RunStateError, run_state_from_text

    name = paths.relative(paths.run_state)
    try:
        return run_state_from_text(_read_text(paths, paths.run_state))
    except RunStateError as error:
        raise UserFacingError(f"{name}: {error}") from None
    except ValueError as error:  # the JSON reader's
        raise UserFacingError(f"{name} is not valid JSON: {error}") from None


def write_run_state(paths: Places, state: RunState) -> None:
    from runner_core.run.state import run_state_to_json

    atomic_write_text(paths.run_state, canonical_json(run_state_to_json(state)))


def read_goal(paths: Places) -> str:
    return _read_text(paths, paths.goal)


def load_goal_id(paths: Places, text: str | None = None) -> str | None:
    """GOAL.md's run id; a GOAL.md without a goal is refused here, before a run starts or a
    step runs."""
    from runner_core.run.identity import RunIdentityError, empty_goal_problem, goal_run_id

    goal = read_goal(paths) if text is None else text
    try:
        run_id = goal_run_id(goal)
    except RunIdentityError as error:
        raise UserFacingError(f"{paths.relative(paths.goal)}: {error}") from None
    problem = empty_goal_problem(goal)
    if problem is not None:
        raise UserFacingError(f"{paths.relative(paths.goal)} {problem}")
    return run_id


def read_gitignore_lines(paths: Places) -> tuple[str, ...] | None:
    try:
        return tuple(_read_text(paths, paths.gitignore).splitlines())
    except UserFacingError:
        if not paths.gitignore.exists():
            return None
        raise


def read_optional_text(path: Path, limit: int = SMALL_FILE_MAX_BYTES) -> str | None:
    """A notes file's text, or None when it is absent; a huge file is cut, never loaded."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit)
    except (FileNotFoundError, NotRegularFile):
        return None
    return data.decode("utf-8", errors="replace")


def with_run_files(paths: Places, facts: RepoFacts, run_id: str | None) -> RepoFacts:
    """`facts` completed with what the run's files say (.gitignore, run id, GOAL.md's id)."""
    return run_files_and_goal(paths, facts, run_id)[0]


def run_files_and_goal(
    paths: Places, facts: RepoFacts, run_id: str | None
) -> tuple[RepoFacts, str]:
    """`with_run_files`, and the text of GOAL.md it read: a step reads it once."""
    import attrs

    gitignore_lines = read_gitignore_lines(paths)
    goal = read_goal(paths)
    completed = attrs.evolve(
        facts, gitignore_lines=gitignore_lines, run_id=run_id, goal_id=load_goal_id(paths, goal)
    )
    return completed, goal
