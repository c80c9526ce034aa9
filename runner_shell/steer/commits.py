"""`runner node ...` and `runner tell`: an operator's change to a run, checked and committed.

Under the lock, on the run branch with a clean tree: read the tree, ask runner_core.run.operations
for the new one (which it validates with every layer), write it canonically and commit it with
trailers naming the run, the operation, the node and the operator. Decides nothing itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from runner_core import Node
from runner_core.iteration.events import operator_event
from runner_core.run.guidance import guidance_commit_message, with_guidance
from runner_core.run.operations import (
    NodeOperation,
    OperationError,
    OperatorAction,
    checked,
    operation_message,
)
from runner_core.tree.serialization import loads_json_strictly
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.event_sink import sink_for
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.step.runner import Loaded, load_for_step
from runner_shell.store.files import FileTooLarge, atomic_write_text, read_bytes_capped
from runner_shell.store.iteration_log import utc_now
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import (
    SMALL_FILE_MAX_BYTES,
    read_optional_text,
    write_tree,
)

# The change gets the tree and the config's max_attempts_default, read once the run is checked.
Change = Callable[[Node, int], Node]


@attrs.frozen(slots=True)
class Applied:
    run_id: str
    before: Node
    after: Node


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """An operation the core refuses is one line for the user."""
    try:
        yield
    except OperationError as error:
        raise UserFacingError(str(error)) from None


def _require_run(paths: RunnerPaths, repo: Repo) -> Loaded:
    """A step's own preconditions (no interrupted iteration, clean tree, run branch), loaded."""
    return load_for_step(paths, repo)


def apply_node_operation(
    paths: RunnerPaths, repo: Repo, op: NodeOperation, node_id: str, change: Change
) -> Applied:
    """Change the tree under the lock, validate, write canonically and commit (a draft's tree,
    before `runner start`, is changed in place: nothing to commit yet)."""
    with exclusive_lock(repo):
        if _is_draft(paths):
            return _apply_to_draft(paths, op, node_id, change)
        return apply_holding_lock(paths, repo, op, node_id, change)


def _is_draft(paths: RunnerPaths) -> bool:
    from runner_shell.store.state_files import load_run_state

    return paths.run_state.is_file() and load_run_state(paths).run_id is None


def _apply_to_draft(paths: RunnerPaths, op: NodeOperation, node_id: str, change: Change) -> Applied:
    from runner_shell.store.state_files import load_config, load_tree

    config, before = load_config(paths), load_tree(paths)
    with refused():
        after = checked(before, change(before, config.max_attempts_default), node_id, op)
    write_tree(paths, after)
    return Applied("draft", before, after)


def apply_holding_lock(
    paths: RunnerPaths, repo: Repo, op: NodeOperation, node_id: str, change: Change
) -> Applied:
    """`apply_node_operation` for a caller that holds the lock already (`runner loop`)."""
    loaded = _require_run(paths, repo)
    before = loaded.tree
    with refused():
        after = checked(before, change(before, loaded.config.max_attempts_default), node_id, op)
    write_tree(paths, after)
    action = OperatorAction(loaded.run_id, op, node_id, repo.actor(), loaded.state.next_iter)
    repo.commit_all(operation_message(action))
    sink = sink_for(paths, loaded.config, loaded.run_id)
    sink.emit((operator_event(action, utc_now()),), fsync=True)
    return Applied(loaded.run_id, before, after)


# An operator's plan is read whole before it is parsed: no plan comes near this, and a device or
# a huge file named by mistake is refused before it fills memory.
OPERATOR_FILE_MAX_BYTES = SMALL_FILE_MAX_BYTES


def read_operator_json(path: Path, option: str = "--from") -> Any:
    """The JSON document of an operator's file; one line naming the file when it is not."""
    try:
        text = read_bytes_capped(path, OPERATOR_FILE_MAX_BYTES).decode("utf-8")
    except FileTooLarge as error:
        raise UserFacingError(
            f"{option} {path}: over {error.limit} bytes; a plan is at most that (make it smaller)"
        ) from None
    except OSError as error:
        raise UserFacingError(f"{option} {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise UserFacingError(f"{option} {path}: not UTF-8 ({error.reason})") from None
    try:
        return loads_json_strictly(text)
    except ValueError as error:
        raise UserFacingError(f"{option} {path}: not JSON: {error}") from None


def add_guidance(paths: RunnerPaths, repo: Repo, text: str) -> str:
    """Append the operator's guidance to guidance.md and commit it; returns the run id."""
    with exclusive_lock(repo):
        run_id = _require_run(paths, repo).run_id
        current = read_optional_text(paths.guidance, SMALL_FILE_MAX_BYTES)
        try:
            updated = with_guidance(current, text)
        except ValueError as error:
            raise UserFacingError(f"tell: {error}") from None
        atomic_write_text(paths.guidance, updated)
        repo.commit_all(guidance_commit_message(run_id, repo.actor()))
    return run_id
