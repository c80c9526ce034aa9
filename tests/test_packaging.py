"""The wheel ships every room: each package directory of runner_core and runner_shell is listed
in pyproject.toml, so `pip install .` (not only an editable install) has all of them. The
library installs with its own dependencies only; the command line is the `cli` extra."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from runner_shell.cli.extra import CLI_EXTRA
from tests.helpers import ROOT


def test_every_package_directory_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("runner_core", "runner_shell")
        for init in (ROOT / top).rglob("__init__.py")
    }

    assert found - listed == set()


LIBRARY = {"attrs", "pyrsistent", "fastjsonschema", "tomli-w"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_library_needs_only_its_own_dependencies_and_the_command_line_is_an_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    assert {_name(r) for r in project["dependencies"]} == LIBRARY
    assert {"typer", "jinja2", "starlette", "uvicorn", "textual"} <= {
        _name(r) for r in extras["cli"]
    }
    assert "runner[cli]" in extras["test"]  # the suite runs the command line


def test_importing_every_module_of_the_library_loads_nothing_of_the_cli_extra() -> None:
    probe = (
        "import pkgutil, importlib, sys, runner_core\n"
        "for found in pkgutil.walk_packages(runner_core.__path__, 'runner_core.'):\n"
        "    if found.name != 'runner_core.testing': importlib.import_module(found.name)\n"
        f"print(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(CLI_EXTRA)!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )

    assert done.stdout == "[]\n", done.stderr
