"""How every backend reads a JSON value an agent CLI printed or wrote.

Decides that text which is not JSON, or nests past the decoder's depth, reads as nothing.
Never raises on an agent's bytes and never reads a file.
"""

from __future__ import annotations

import json
from typing import Any


def parse_json(text: str | bytes) -> Any:
    """The JSON value `text` holds; None when it holds none."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
