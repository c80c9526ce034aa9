"""The public API of runner_core: one table of about thirty names, each with its own docstring,
loaded lazily, and seen by type checkers exactly as the table says; every type an exported
function takes or returns and every error an exported name documents or raises is in it."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import subprocess
import sys
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path

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


EXPORTED = frozenset(getattr(rc, name) for name in rc.__all__)
FUNCTIONS = tuple(name for name in rc.__all__ if inspect.isfunction(getattr(rc, name)))


def core_types(annotation: object) -> set[type]:
    """The classes of runner_core an annotation names, through unions and generics."""
    found: set[type] = set()
    origin = typing.get_origin(annotation)
    if origin is not None:
        for argument in typing.get_args(annotation):
            found |= core_types(argument)
        annotation = origin
    if isinstance(annotation, type) and annotation.__module__.startswith("runner_core"):
        found.add(annotation)
    return found


def exception_named(name: str, namespace: dict[str, object]) -> type[BaseException] | None:
    """The exception class `name` means where `namespace` is read: there, a builtin, or any
    loaded module of runner_core (exported or not: the test is whether it is)."""
    modules = [mod for key, mod in sorted(sys.modules.items()) if key.startswith("runner_core.")]
    candidates = [namespace.get(name), getattr(builtins, name, None)]
    candidates += [vars(module).get(name) for module in modules]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseException):
            return candidate
    return None


def documented_errors(value: object) -> set[type[BaseException]]:
    """The exceptions a docstring names in backticks."""
    namespace = vars(sys.modules[value.__module__])
    named = re.findall(r"`(\w+)`", inspect.getdoc(value) or "")
    return {error for name in named if (error := exception_named(name, namespace)) is not None}


def raised_in(function: Callable[..., object]) -> set[type[BaseException]]:
    """The exception classes `function`'s own body raises by name."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    raised: set[type[BaseException]] = set()
    for statement in ast.walk(tree):
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            target = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
            if isinstance(target, ast.Name):
                error = exception_named(target.id, function.__globals__)
                raised |= set() if error is None else {error}
    return raised


def own_code(name: str) -> list[Callable[..., object]]:
    """An exported function, or the checks an exported class runs when one is built."""
    value = getattr(rc, name)
    if inspect.isfunction(value):
        return [value]
    post_init = vars(value).get("__attrs_post_init__") if inspect.isclass(value) else None
    return [] if post_init is None else [post_init]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_type_an_exported_function_takes_or_returns_is_exported(name: str) -> None:
    hints = typing.get_type_hints(getattr(rc, name))
    referenced = set().union(*map(core_types, hints.values()))
    assert sorted(kind.__qualname__ for kind in referenced - EXPORTED) == []


@pytest.mark.parametrize("name", rc.__all__)
def test_every_error_of_runner_core_an_exported_name_documents_is_exported(name: str) -> None:
    documented = documented_errors(getattr(rc, name))
    own = {error for error in documented if error.__module__.startswith("runner_core")}
    assert sorted(error.__qualname__ for error in own - EXPORTED) == []


@pytest.mark.parametrize("name", rc.__all__)
def test_every_error_an_exported_name_raises_itself_is_in_its_docstring(name: str) -> None:
    documented = documented_errors(getattr(rc, name))
    raised = set().union(*map(raised_in, own_code(name)))
    assert sorted(error.__qualname__ for error in raised - documented) == []


CACHE = ("--cache-dir", str(ROOT / ".mypy_cache"))

# A public name read both ways, then two typos: only the typos may fail mypy.
NAMES_SNIPPET = """
import runner_core as rc
from runner_core import select_leaf
from runner_core import selct_leaf  # typo


def names(text: str) -> str:
    tree = rc.parse_tree(text)
    rc.parse_tre(text)  # typo
    return select_leaf(tree).status.value
"""


def test_a_name_runner_core_does_not_export_fails_mypy(tmp_path: Path) -> None:
    module = tmp_path / "names.py"
    module.write_text(NAMES_SNIPPET, encoding="utf-8")
    typos = {n for n, line in enumerate(NAMES_SNIPPET.splitlines(), 1) if line.endswith("# typo")}
    # In a process of its own, from the checkout, so that it reads runner_core's source.
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(module), *CACHE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )

    flagged = {
        int(line.split(":")[1]) for line in checked.stdout.splitlines() if ": error:" in line
    }
    assert flagged == typos, checked.stdout + checked.stderr
