"""The wheel ships every room: each package directory of runner_core and runner_shell is listed
in pyproject.toml, so `pip install .` (not only an editable install) has all of them."""

from __future__ import annotations

import tomllib

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
