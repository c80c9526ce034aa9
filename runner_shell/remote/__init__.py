"""Leaf jobs run on other machines: the Temporal transport (docs/temporal.md).

`temporal.py` is the only module that imports temporalio; it is imported only once a command
needs it, after `require_temporal()` has said the extra is installed. `errors.py` holds what
the rest of runner_shell catches, importable without temporalio.
"""

from __future__ import annotations

import importlib

from runner_shell.errors import UserFacingError

MISSING_EXTRA = "executor kind 'temporal' needs the Temporal extra: pip install 'runner[temporal]'"


def require_temporal() -> None:
    """Refuse, in one line, to go on without the `temporal` extra installed."""
    try:
        # By name: the import graph keeps temporalio to temporal.py, and this only asks.
        importlib.import_module("temporalio")
    except ImportError:
        raise UserFacingError(MISSING_EXTRA) from None
