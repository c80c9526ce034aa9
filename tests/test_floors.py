"""The rooms stand in floors: each package's rooms import only rooms on their own floor or
below (tests/floors.py), and no two rooms import each other, even around a loop.

The graph is `tests/test_import_graph.py`'s, every import counted wherever it is written,
grouped by room: the subpackage a module is in, or for a module directly in the package its own
name. The package's own `__init__` (its table of public names) is no room.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.floors import FLOORS, floor_table, order_of
from tests.helpers import ROOT
from tests.test_import_graph import find_cycle, import_graph

Arrows = Mapping[str, Mapping[str, frozenset[str]]]


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def room_arrows(
    graph: Mapping[str, frozenset[str]], package: str
) -> dict[str, dict[str, frozenset[str]]]:
    """For each room of `package`, each other room of it that it imports, with the module
    imports (`a -> b`) that make the arrow."""
    arrows: dict[str, dict[str, set[str]]] = {}
    for module, targets in graph.items():
        source = _room(module)
        if module.split(".")[0] != package or source is None:
            continue
        arrows.setdefault(source, {})
        for target in targets:
            room = _room(target)
            if target.split(".")[0] == package and room is not None and room != source:
                arrows[source].setdefault(room, set()).add(f"{module} -> {target}")
    return {
        room: {target: frozenset(why) for target, why in sorted(out.items())}
        for room, out in sorted(arrows.items())
    }


def back_arrows(arrows: Arrows, package: str) -> dict[tuple[str, str, str], frozenset[str]]:
    """The arrows from a room to a room after it in the order (on its floor or higher)."""
    place = order_of(package)
    return {
        (package, room, target): why
        for room, out in arrows.items()
        for target, why in out.items()
        if place[target] > place[room]
    }


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_every_room_stands_on_one_floor_and_each_package_on_five_at_most(package: str) -> None:
    declared = [room for rooms in FLOORS[package] for room in rooms]
    rooms = {
        path.stem if path.is_file() else path.name
        for path in (ROOT / package).iterdir()
        if (path.is_dir() and (path / "__init__.py").exists())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }

    assert len(FLOORS[package]) <= 5
    assert len(declared) == len(set(declared))
    assert sorted(declared) == sorted(rooms)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_no_room_imports_a_room_after_it_in_the_order(package: str) -> None:
    found = back_arrows(room_arrows(import_graph(ROOT), package), package)

    against = {f"{room} -> {target}": sorted(why) for (_, room, target), why in found.items()}
    assert against == {}, "rooms importing a room after them: " + repr(against)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_no_two_rooms_import_each_other_even_around_a_loop(package: str) -> None:
    arrows = room_arrows(import_graph(ROOT), package)

    cycle = find_cycle({room: frozenset(out) for room, out in arrows.items()})

    assert cycle is None, "rooms in a cycle: " + " -> ".join(cycle or ())


def test_an_arrow_up_a_floor_is_found_wherever_it_is_written(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for room in ("low", "high"):
        (package / room).mkdir(parents=True)
        (package / room / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from pkg.high import top\n")
    (package / "high" / "top.py").write_text("from pkg.low import base\n")
    (package / "low" / "base.py").write_text("def later() -> None:\n    from pkg.high import top\n")

    arrows = room_arrows(import_graph(tmp_path, ("pkg",)), "pkg")

    assert arrows == {
        "high": {"low": frozenset({"pkg.high.top -> pkg.low.base"})},
        "low": {"high": frozenset({"pkg.low.base -> pkg.high.top"})},
    }
    assert find_cycle({room: frozenset(out) for room, out in arrows.items()}) == [
        "high",
        "low",
        "high",
    ]


def test_the_architecture_document_draws_the_declared_floors() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")

    assert floor_table() in text


def test_an_arrow_to_a_room_after_it_on_its_own_floor_is_against_the_order() -> None:
    core = [room for rooms in FLOORS["runner_core"] for room in rooms]
    low, high = core[0], core[1]
    arrows = {low: {high: frozenset({"a -> b"})}, high: {}}

    assert back_arrows(arrows, "runner_core") == {("runner_core", low, high): frozenset({"a -> b"})}
    assert back_arrows({high: {low: frozenset({"b -> a"})}}, "runner_core") == {}


TESTS_OF = {"runner_core": "core", "runner_shell": "shell"}


def rooms_without_tests(root: Path, package: str) -> list[str]:
    """The subpackages of `package` under `root` with no `tests/<core|shell>/<room>/test_*.py`:
    the tests mirror the rooms, so a room's own tests are found where the room is."""
    tests = root / "tests" / TESTS_OF[package]
    return sorted(
        room.name
        for room in (root / package).iterdir()
        if (room / "__init__.py").is_file() and not any((tests / room.name).glob("test_*.py"))
    )


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_every_room_has_tests_of_its_own(package: str) -> None:
    assert rooms_without_tests(ROOT, package) == []


def test_a_room_without_its_tests_directory_is_found(tmp_path: Path) -> None:
    for room in ("kept", "bare"):
        (tmp_path / "runner_shell" / room).mkdir(parents=True)
        (tmp_path / "runner_shell" / room / "__init__.py").write_text("")
    (tmp_path / "tests" / "shell" / "kept").mkdir(parents=True)
    (tmp_path / "tests" / "shell" / "kept" / "test_kept.py").write_text("")
    (tmp_path / "tests" / "shell" / "bare").mkdir()  # a directory alone is no tests
    assert rooms_without_tests(tmp_path, "runner_shell") == ["bare"]
