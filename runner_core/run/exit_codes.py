"""The exit codes of every `runner` command, in one place.

Decides only the numbers: 0 ok (or an open leaf), 1 an error or the loop's iteration limit,
2 the tree is complete, 3 a leaf is stuck; 130 an interrupt, as shells expect.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1
    COMPLETE = 2
    STUCK = 3
    INTERRUPTED = 130
