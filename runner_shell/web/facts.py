"""What `runner serve`'s page is rendered from (runner_shell/web/page.py, pictures.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
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
