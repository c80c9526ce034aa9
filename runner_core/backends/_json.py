"""How every backend reads a JSON value an agent CLI printed or wrote.

Decides that text which is not JSON, or nests past the decoder's depth, reads as nothing.
Never raises on an agent's bytes and never reads a file.
"""

from __future__ import annotations

from typing import Any

from runner_core.json_text import json_value


def parse_json(text: str | bytes) -> Any:
    """The JSON value `text` holds; None when it holds none."""
    try:
        return json_value(text)
    except ValueError:
        return None
