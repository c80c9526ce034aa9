"""Rules about how the rooms import each other: no cycle, and the core never imports the shell.

Every import counts, wherever it is written: at the top, inside a function, under
`TYPE_CHECKING`. A function-level import defers a cycle to run time rather than removing it, so
a shared piece belongs in a lower room instead (docs/architecture.md). Imports made from a
string at run time (the PEP 562 table of runner_core/__init__.py) are not seen here; an import
that exists only for start-up speed is fine as long as it closes no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("runner_core", "runner_shell")
Graph = Mapping[str, frozenset[str]]


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Each module's dotted name and file; a package is named by its `__init__.py`."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported_names(module: str, path: Path) -> Iterator[str]:
    """Every dotted name `module` imports, relative imports made absolute; `from a import b` is
    `a.b` (b may be a submodule or a name in a)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module `name` lands in: itself, else its nearest enclosing module we know."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, frozenset[str]]:
    """Which of the packages' modules each module imports (itself excepted).

    `from a import b` counts as importing `a.b` when that is a module, else `a`. A package's
    `__init__` counts only where it is named: Python runs it before any module beneath it, but
    an edge from every submodule to its package would make each package's own table of names a
    cycle, and an `__init__` that imports a submodule is an edge out of it anyway.
    """
    modules = _modules(root, packages)
    graph = {}
    for module, path in modules.items():
        targets = set()
        for name in _imported_names(module, path):
            target = _known(name, modules)
            if target is not None and target != module:
                targets.add(target)
        graph[module] = frozenset(targets)
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One import cycle, as the modules along it with the first repeated last; None if none.

    Depth-first in sorted order, so the same graph always names the same cycle.
    """
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        pending = [iter(sorted(graph[start]))]
        while pending:
            target = next(pending[-1], None)
            if target is None:
                pending.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif target in on_path:
                return [*path[path.index(target) :], target]
            elif target not in done and target in graph:
                path.append(target)
                on_path.add(target)
                pending.append(iter(sorted(graph[target])))
    return None


def test_no_module_of_runner_core_or_runner_shell_is_part_of_an_import_cycle() -> None:
    cycle = find_cycle(import_graph(ROOT))

    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_runner_core_never_imports_runner_shell() -> None:
    graph = import_graph(ROOT)
    reaching = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "runner_core"
        for target in targets
        if target.split(".")[0] == "runner_shell"
    )

    assert reaching == []


def test_the_graph_sees_imports_in_functions_and_under_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "room").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "room" / "__init__.py").write_text("")
    (package / "top.py").write_text("def later() -> None:\n    from pkg.room import low\n")
    (package / "room" / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..mid import Thing\n"
    )
    (package / "mid.py").write_text("import pkg.top\n")

    graph = import_graph(tmp_path, ("pkg",))

    assert graph["pkg.top"] == {"pkg.room.low"}
    assert graph["pkg.room.low"] == {"pkg.mid"}
    assert find_cycle(graph) == ["pkg.mid", "pkg.top", "pkg.room.low", "pkg.mid"]


def test_a_graph_without_a_cycle_has_none() -> None:
    assert find_cycle({"a": frozenset({"b", "c"}), "b": frozenset({"c"}), "c": frozenset()}) is None
