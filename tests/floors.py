"""The declared order of each package's rooms (subpackages, and the shell's top-level modules),
lowest first, in floors.

A room imports only rooms before it in the order: below it, or earlier on its own floor. So no
room imports a higher floor and no two rooms import each other, directly or around a loop.
`tests/test_floors.py` checks the code against this table over every import (top level, inside
functions, under `TYPE_CHECKING`), and docs/architecture.md draws it (`floor_table`), checked
to match.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

Floors = tuple[tuple[str, ...], ...]

FLOORS: Mapping[str, Floors] = MappingProxyType(
    {
        "runner_core": (
            ("json_text", "json_form", "tree", "validation", "guard", "eval"),
            ("backends", "history", "run", "changes", "prompt"),
            ("loop", "iteration"),
            ("views", "parallel"),
            ("audit", "testing"),
        ),
        "runner_shell": (
            ("errors", "signals", "store", "git", "notify"),
            ("sandbox", "scratch", "agents", "guard"),
            ("step",),
            ("steer", "remote", "loop", "setup", "eval"),
            ("views", "tui", "web", "cli", "__main__"),
        ),
    }
)


def order_of(package: str) -> dict[str, int]:
    """Each room of `package` and its place in the order, 0 the lowest."""
    return {
        room: place
        for place, room in enumerate(room for rooms in FLOORS[package] for room in rooms)
    }


def floor_table() -> str:
    """The floors as the Markdown table docs/architecture.md shows, highest floor first."""
    lines = ["| floor | `runner_core` | `runner_shell` |", "|---|---|---|"]
    core, shell = FLOORS["runner_core"], FLOORS["runner_shell"]
    for level in range(max(len(core), len(shell)), 0, -1):
        cells = [
            ", ".join(f"`{room}`" for room in floors[level - 1]) if level <= len(floors) else ""
            for floors in (core, shell)
        ]
        lines.append(f"| {level} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"
