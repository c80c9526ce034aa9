"""JSON and TOML text anyone but this process wrote (an agent, a guard, a worker, the user's
checkout, an eval case), read as a value or refused as not JSON or not TOML.

Decides that text nested past the decoder's depth holds no value: it fails as a `ValueError`,
as text that is not JSON (or TOML) does, never as the `RecursionError` `json.loads` and
`tomllib.loads` raise. Every reader of such text calls `json_value` or `toml_value`; what a
refusal comes to is the reader's.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "it nests deeper than the JSON reader can follow"
TOML_TOO_DEEP = "it nests too deep to read"


class TooDeep(ValueError):
    """JSON text nested past the decoder's depth."""


def json_value(text: str | bytes, **options: Any) -> Any:
    """`json.loads(text, **options)`; `TooDeep` (a ValueError) for text nested too deep."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise TooDeep(TOO_DEEP) from None


def toml_value(text: str) -> dict[str, Any]:
    """`tomllib.loads(text)`; `TooDeep` (a ValueError, as `tomllib.TOMLDecodeError` is) for text
    nested too deep."""
    import tomllib  # only the commands that read TOML pay for it

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TooDeep(TOML_TOO_DEEP) from None
