"""What `runner init` proposes for a project it recognises by the files at its top: the guard
command, and `[sandbox] setup` with the `setup_inputs` it reads (docs/sandbox.md, "Setup
rebuilt when its inputs change"). The README's "Designing guards" has the rest.

A project with a justfile keeps the default guard (`just ci`, its own recipe). A Node project
(`package.json`) is judged by its package manager's `test` script, where it has one, and set up
by the install its lock file asks for (`npm ci`, `pnpm install --frozen-lockfile`, `yarn install
--frozen-lockfile`; `npm install` without one): the install writes `node_modules` inside the
checkout, where the guard finds it, and runs again when `package.json` or the lock changes. A Go
(`go.mod`) or Rust (`Cargo.toml`) project gets its test command only: their tools keep
downloaded modules under HOME, which is private to each session, so a setup there would not
reach the guard (docs/sandbox.md). Anything else keeps the defaults. The first rule that
matches decides; the same files give the same proposal.
"""

from __future__ import annotations

from collections.abc import Set

import attrs

_JUSTFILES = ("justfile", "Justfile", ".justfile")
# The lock file that names a Node project's package manager, in the order they are looked for.
_NODE_LOCKS = (
    ("pnpm-lock.yaml", ("pnpm", "install", "--frozen-lockfile"), ("pnpm", "test")),
    ("yarn.lock", ("yarn", "install", "--frozen-lockfile"), ("yarn", "test")),
    ("package-lock.json", ("npm", "ci"), ("npm", "test")),
)


@attrs.frozen(slots=True)
class ProjectKind:
    """A project `init` recognised: its name, the file that told, the guard command (None:
    the default stands) and its setup with the files that setup reads (none: no setup)."""

    name: str
    found: str
    guard: tuple[str, ...] | None
    setup: tuple[str, ...] = ()
    setup_inputs: tuple[str, ...] = ()


def project_kind(top_files: Set[str], node_scripts: Set[str] = frozenset()) -> ProjectKind | None:
    """The kind of the project whose top holds `top_files` (names of regular files), its
    `package.json` naming `node_scripts`; None when none is recognised."""
    if any(name in top_files for name in _JUSTFILES):
        return None
    if "package.json" in top_files:
        return _node(top_files, node_scripts)
    if "go.mod" in top_files:
        return ProjectKind("Go", "go.mod", ("go", "test", "./..."))
    if "Cargo.toml" in top_files:
        return ProjectKind("Rust", "Cargo.toml", ("cargo", "test"))
    return None


def _node(top_files: Set[str], scripts: Set[str]) -> ProjectKind:
    for lock, setup, test in _NODE_LOCKS:
        if lock in top_files:
            guard = test if "test" in scripts else None
            return ProjectKind("Node", lock, guard, setup, tuple(sorted(("package.json", lock))))
    guard = ("npm", "test") if "test" in scripts else None
    return ProjectKind("Node", "package.json", guard, ("npm", "install"), ("package.json",))
