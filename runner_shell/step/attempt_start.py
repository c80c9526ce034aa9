"""Where a node's next attempt starts: its previous attempt's files carried onto the run branch.

Reads the record of the iteration the node's agent is told of, asks
runner_core.iteration.record whether the node starts from that attempt's files, and when it
does, carries them from its ref onto the head (runner_shell/git/attempt_refs.py) into the
commit the agent's checkout is reset to. Every other node, and a node whose attempt cannot be
read, starts from the head.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner_core.history.records import ExecutionRecord, record_from_meta
from runner_core.iteration.record import Resumed, failure_reason, resume_from
from runner_shell.git.attempt_refs import read_attempt, start_from_attempt
from runner_shell.git.repo import GitError, Repo
from runner_shell.store.files import read_bytes_capped
from runner_shell.store.iteration_log import META_MAX_BYTES


def told_record(iter_dir: Path) -> ExecutionRecord | None:
    """The record of the iteration in `iter_dir`, None when it cannot be read."""
    try:
        data = read_bytes_capped(iter_dir / "meta.json", META_MAX_BYTES)
        return record_from_meta(json.loads(data.decode("utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def attempt_start(
    repo: Repo, run_id: str, node_id: str, told: ExecutionRecord | None, head: str
) -> tuple[str, Resumed | None]:
    """The commit the node's checkout starts from, and what its prompt is told of it."""
    iteration = resume_from(node_id, told)
    if iteration is None or told is None:
        return head, None
    try:
        attempt = read_attempt(repo, run_id, iteration)
        if attempt is None:  # `runner audit` names the missing ref
            return head, None
        start, conflicts = start_from_attempt(repo, attempt, head)
    except GitError:
        return head, None
    return start or head, Resumed(iteration, failure_reason(told), conflicts)
