"""The public API of runner_core: one table of about thirty names, each with its own docstring,
loaded lazily, and seen by type checkers exactly as the table says."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import pytest

import runner_core as rc
from tests.helpers import ROOT

INTERNAL = ("META_FIELDS", "record_to_meta", "sort_key", "with_run_id", "TRANSITIONS")


def type_checking_imports() -> dict[str, set[str]]:
    """The names the `if TYPE_CHECKING:` block of runner_core/__init__.py imports, by module."""
    source = (ROOT / "runner_core" / "__init__.py").read_text(encoding="utf-8")
    found: dict[str, set[str]] = {}
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING":
            for imported in statement.body:
                assert isinstance(imported, ast.ImportFrom) and imported.module is not None
                assert all(alias.asname == alias.name for alias in imported.names)
                found.setdefault(imported.module, set()).update(a.name for a in imported.names)
    return found


def test_the_type_checkers_imports_are_exactly_the_table() -> None:
    assert type_checking_imports() == {
        module: set(names) for module, names in rc._MODULES_EXPORTS.items()
    }


def test_all_is_the_tables_names_sorted_and_fits_on_a_page() -> None:
    names = [name for names in rc._MODULES_EXPORTS.values() for name in names]
    assert rc.__all__ == tuple(sorted(names))
    assert len(set(names)) == len(names)
    assert 25 <= len(names) <= 40


@pytest.mark.parametrize("name", rc.__all__)
def test_a_public_name_comes_from_its_tables_module_with_its_own_docstring(name: str) -> None:
    value = getattr(rc, name)
    assert value.__module__ == rc._MODULE_OF[name]
    own = vars(value).get("__doc__") if inspect.isclass(value) else value.__doc__
    assert own and own.strip(), f"{name} has no docstring of its own"


@pytest.mark.parametrize("name", INTERNAL)
def test_an_internal_name_is_not_exported(name: str) -> None:
    assert name not in rc.__all__
    with pytest.raises(AttributeError):
        getattr(rc, name)


def test_the_machine_and_the_review_are_public() -> None:
    assert {"start_iteration", "IterationMachine", "review_tree_change"} <= set(rc.__all__)


def test_importing_runner_core_loads_none_of_its_modules() -> None:
    program = (
        "import sys, runner_core; print(sorted(m for m in sys.modules if 'runner_core.' in m))"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout == "[]\n"


@pytest.mark.parametrize(
    "room",
    [
        "tree",
        "validation",
        "iteration",
        "loop",
        "run",
        "history",
        "backends",
        "views",
        "guard",
        "parallel",
    ],
)
def test_every_room_says_what_it_offers(room: str) -> None:
    module = __import__(f"runner_core.{room}", fromlist=["_"])
    assert module.__doc__ and len(module.__doc__.strip().splitlines()) >= 2
