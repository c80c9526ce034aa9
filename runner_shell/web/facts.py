"""What `runner serve`'s page is rendered from (runner_shell/web/page.py, pictures.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from runner_core.history.records import ExecutionHistory


@attrs.frozen
class PageFacts:
    """What the page is rendered from: the status document, the overview, the history and the
    clock reading; `problem` is why they could not be read (the page says so)."""

    status: Mapping[str, Any] | None
    overview: Mapping[str, Any] | None
    history: ExecutionHistory
    now: datetime
    problem: str | None = None
    slots: int = 1  # `[parallel] slots`: the timeline's lanes


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells one version of a file from the next: an atomic write is a new inode, an append
    a new size, and the mtime catches a rewrite in place. None when it cannot be stat'ed: missing,
    or an agent's symlink loop, a file where a directory should be, a directory it cannot enter;
    the link itself is stat'ed, never followed."""
    try:
        facts = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return facts.st_ino, facts.st_mtime_ns, facts.st_size
