"""A step reads its inputs once: the walk of its paths through the shell's rooms stays short.

What is counted. One real `runner step` (one agent that says done, a guard that passes) runs
in this process, from `run_step` in runner_shell/step/runner.py, under `sys.setprofile`. Every
call into a Python function defined in `runner_shell/` is recorded when one of its arguments
(`self` included) is a `RunnerPaths` or the `StepPlaces` a step derives from it once
(runner_shell/store/places.py), or holds one as an attribute (a slot, attrs' among them, or
a `__dict__` entry: a value that carries the paths along counts as handing them along). Calls
made on other threads and in child processes are not seen. Each recorded call is put in its
room: the subpackage of `runner_shell` its module is in (`store`, `git`, `step`, ...), or
`runner_shell` for a top-level module. A `RunnerPaths` property or `StepPlaces` method is such
a call (its `self` is one, in `store`): deriving a path from the paths again is a visit there.

A *stay* is a maximal run of consecutive recorded calls in one room; a *return* is a stay in a
room the walk had already left. A step that gathers its paths into one value at its start and
hands the derived paths along (not the `RunnerPaths` to re-derive them from) makes few of both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import attrs
import pytest

from runner_shell.store.layout import RunnerPaths
from runner_shell.store.places import StepPlaces
from tests.helpers.e2e import Project, node

DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
PLACES = (RunnerPaths, StepPlaces)
SHELL_DIR = Path(sys.modules["runner_shell"].__file__ or "").resolve().parent

# What the walk came to when it was last cut; a change that makes it longer fails here.
MAX_STAYS = 11
MAX_RETURNS = 8


@attrs.frozen(slots=True)
class Walk:
    """The rooms of the recorded calls, in order, with the module of each call."""

    calls: tuple[tuple[str, str], ...]  # (room, module path under runner_shell)

    @property
    def stays(self) -> tuple[str, ...]:
        rooms = [room for room, _ in self.calls]
        return tuple(
            room for index, room in enumerate(rooms) if index == 0 or rooms[index - 1] != room
        )

    @property
    def returns(self) -> int:
        left: set[str] = set()
        count = 0
        stays = self.stays
        for index, room in enumerate(stays):
            if room in left:
                count += 1
            if index > 0:
                left.add(stays[index - 1])
        return count


def carries_paths(value: object) -> bool:
    """Whether `value` is a `RunnerPaths` or a `StepPlaces`, or holds one as an attribute."""
    if isinstance(value, PLACES):
        return True
    if isinstance(value, type | str | bytes | int | float | Path) or value is None:
        return False
    names: list[str] = []
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend((slots,) if isinstance(slots, str) else slots)
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        names.extend(attributes)
    return any(isinstance(getattr(value, name, None), PLACES) for name in names)


def room_of(filename: str) -> tuple[str, str] | None:
    """The room and module (under runner_shell) of a code object's file, if it is the shell's."""
    try:
        relative = Path(filename).resolve().relative_to(SHELL_DIR)
    except ValueError:
        return None
    room = relative.parts[0] if len(relative.parts) > 1 else "runner_shell"
    return room, relative.as_posix()


def arguments(frame: FrameType) -> Iterator[Any]:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    for name in code.co_varnames[:count]:
        value = frame.f_locals.get(name)
        if isinstance(value, tuple | list) and not isinstance(value, RunnerPaths):
            yield from value
        elif isinstance(value, dict):
            yield from value.values()
        else:
            yield value


def walk_of_a_step(project: Project, monkeypatch: pytest.MonkeyPatch) -> Walk:
    from runner_shell.git.run_checkout import locate_run
    from runner_shell.step.runner import run_step

    project.prepare(
        node("root", next_="decompose", children=[node("root.1")]),
        guard_command=["true"],
        agent_command=["sh", "-c", DONE],
    )
    for key in list(os.environ):
        if key not in project.env:
            monkeypatch.delenv(key)
    for key, value in project.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(project.root)
    paths, repo = locate_run(Path.cwd())
    calls: list[tuple[str, str]] = []
    rooms: dict[str, tuple[str, str] | None] = {}

    def record(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        if filename not in rooms:
            rooms[filename] = room_of(filename)
        place = rooms[filename]
        if place is not None and any(carries_paths(value) for value in arguments(frame)):
            calls.append(place)

    sys.setprofile(record)
    try:
        result = run_step(paths, repo, 100_000)
    finally:
        sys.setprofile(None)
    assert result.exit_code == 0
    return Walk(tuple(calls))


def test_a_step_walks_its_paths_through_few_rooms(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    walk = walk_of_a_step(project, monkeypatch)

    print(f"stays={len(walk.stays)} rooms={len(set(walk.stays))} returns={walk.returns}")
    print(" > ".join(walk.stays))
    assert len(walk.stays) <= MAX_STAYS, walk.stays
    assert walk.returns <= MAX_RETURNS, walk.stays
