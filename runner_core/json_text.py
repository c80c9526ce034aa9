"""JSON text anyone but this process wrote (an agent, a guard, a worker, the user's checkout),
read as a value or refused as not JSON.

Decides that text nested past the decoder's depth holds no value: it fails as a `ValueError`,
as text that is not JSON does, never as the `RecursionError` `json.loads` raises. Every reader
of such text calls `json_value`; what a refusal comes to is the reader's.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "it nests deeper than the JSON reader can follow"


class TooDeep(ValueError):
    """JSON text nested past the decoder's depth."""


def json_value(text: str | bytes, **options: Any) -> Any:
    """`json.loads(text, **options)`; `TooDeep` (a ValueError) for text nested too deep."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise TooDeep(TOO_DEEP) from None
