"""Which fix a problem's one-line message points to, when more than one could.

Decides the hint for a missing state file: restore it from git when git still has it
(`init --force` would wipe the tree and config), else scaffold with `runner init`. Never asks
git itself; the shell says whether HEAD holds the file.
"""

from __future__ import annotations

INIT_HINT = "(run 'runner init')"


def missing_state_file_problem(name: str, in_head: bool) -> str:
    if in_head:
        return f"{name} is missing but git still has it (run 'git checkout -- {name}')"
    return f"{name} is missing {INIT_HINT}"
