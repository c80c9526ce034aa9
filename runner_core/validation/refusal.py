"""What a schema compiled ahead of time raises when a document does not meet it.

The generated modules (runner_core/validation/_validators.py, runner_core/run/_config_validator.py,
written by scripts/gen_validators.py) raise this under fastjsonschema's own name,
`JsonSchemaValueException`, with the same fields, so reading a document or the config never
imports fastjsonschema, which is a compiler: only a schema compiled at run time raises its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PATH_SEPARATORS = re.compile(r"[.\[\]]+")


class SchemaRefusal(ValueError):
    """One value a schema refuses: `name` is its place (`data.loop.backoff[1]`), `rule` the
    keyword it breaks and `definition` the schema node holding that keyword."""

    def __init__(
        self,
        message: str,
        value: Any = None,
        name: str = "data",
        definition: Mapping[str, Any] | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition: Mapping[str, Any] = definition or {}
        self.rule = rule

    @property
    def path(self) -> list[str]:
        """`name` split into its keys and indices, `data` first, as fastjsonschema says it."""
        return [part for part in _PATH_SEPARATORS.split(self.name) if part]
