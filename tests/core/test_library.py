"""Specification of runner_core as a library (README "The library: runner_core").

What a library user relies on: nothing exported can be changed in place, a selection's status
compares equal to its text, decomposition takes the decomposer's plain child objects, the
README's example runs, and `import runner_core` works from a source checkout with no install.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import re
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

import pytest

import runner_core as rc
from runner_core.prompt.pack import SECTION_TITLES
from runner_core.tree.decompose import child_specs_from_output
from runner_core.tree.serialization import _LAYER_PREFIX
from runner_core.tree.state_update import TRANSITIONS
from runner_core.validation.status import GAINS_CHILDREN
from tests.helpers import ROOT
from tests.helpers.trees import node, tree

# ---------------------------------------------------------------- immutable tables

MUTABLE_TYPES = (dict, list, set, bytearray)
# Left to the iteration rebuild (branch h/machine), which owns runner_core/config.py.
KNOWN_MUTABLE: set[tuple[str, str]] = set()


@pytest.mark.parametrize(
    ("table", "key"),
    [
        (TRANSITIONS, (rc.AgentStatus.DONE, rc.GuardOutcome.PASS)),
        (SECTION_TITLES, "goal"),
        (GAINS_CHILDREN, rc.AgentStatus.DONE),
        (_LAYER_PREFIX, "json"),
    ],
)
def test_an_exported_table_cannot_be_changed_in_place(table: Any, key: Any) -> None:
    before = dict(table)
    with pytest.raises(TypeError):
        table[key] = None
    with pytest.raises((TypeError, AttributeError)):
        del table[key]
    assert dict(table) == before


def test_no_public_name_of_runner_core_is_a_mutable_collection() -> None:
    mutable = [name for name in rc.__all__ if isinstance(getattr(rc, name), MUTABLE_TYPES)]
    assert mutable == []
    assert isinstance(rc.__all__, tuple)


def test_no_module_of_runner_core_holds_a_mutable_collection_at_module_level() -> None:
    found = set()
    for info in pkgutil.walk_packages(rc.__path__, "runner_core."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not name.startswith("__") and isinstance(value, MUTABLE_TYPES):
                found.add((module.__name__, name))
    assert found <= KNOWN_MUTABLE


def test_an_exported_collection_is_a_read_only_type() -> None:
    for name in rc.__all__:
        value = getattr(rc, name)
        if isinstance(value, Mapping):
            assert not isinstance(value, dict), name
        elif isinstance(value, Set):
            assert isinstance(value, frozenset), name


# ---------------------------------------------------------------- selection and decomposition


@pytest.mark.parametrize(
    ("root", "text"),
    [
        (tree("root", tree("a")), "open"),
        (tree("root", tree("a", passes=True), passes=True), "complete"),
        (tree("root", tree("a", attempts=3, max_attempts=3)), "stuck"),
    ],
)
def test_a_selection_status_compares_equal_to_its_text(root: rc.Node, text: str) -> None:
    status = rc.select_leaf(root).status

    assert status == text
    assert f"{status}" == text
    assert status is rc.SelectionStatus(text)
    assert status.value == text


def test_decompose_node_takes_the_decomposers_plain_child_objects() -> None:
    root = tree("root", next="decompose")
    children = [
        {"title": "one", "goal": "g1", "acceptance": ["a"], "next": "execute"},
        {"title": "two", "goal": "g2", "acceptance": [], "next": "decompose"},
    ]

    from_mappings = rc.decompose_node(root, "root", children, 3)
    from_specs = rc.decompose_node(root, "root", child_specs_from_output({"children": children}), 3)

    assert from_mappings == from_specs
    assert [child.id for child in from_mappings.children] == ["root.1", "root.2"]
    assert from_mappings.children[1].next is rc.NodeNext.DECOMPOSE


def test_decompose_node_takes_child_specs_and_mappings_mixed() -> None:
    spec = rc.ChildSpec(title="one", goal="g", acceptance=(), next=rc.NodeNext.EXECUTE)
    mapping = {"title": "two", "goal": "g", "acceptance": [], "next": "execute"}

    decomposed = rc.decompose_node(tree("root"), "root", [spec, mapping], 2)

    assert [child.title for child in decomposed.children] == ["one", "two"]


# ---------------------------------------------------------------- the README's example


def readme_library_block(language: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The library: `runner_core`", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1
    return str(blocks[0])


def readme_library_example() -> str:
    return readme_library_block("python")


def run_example(tmp_path: Path, root: dict[str, Any] | str) -> str:
    state = tmp_path / ".runner" / "state"
    state.mkdir(parents=True)
    text = root if isinstance(root, str) else json.dumps(root)
    (state / "tree.json").write_text(text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", readme_library_example()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def test_the_readme_example_runs_on_an_open_tree(tmp_path: Path) -> None:
    root = node("root", node("a", order=0), node("b", order=1))

    out = run_example(tmp_path, root)

    first, second = out.splitlines()[:2]
    assert first == "open root/a"
    assert second == "('a',) ()"
    written = (tmp_path / ".runner" / "state" / "tree.json").read_text(encoding="utf-8")
    assert rc.parse_tree(written).children[0].passes
    assert written == rc.dumps_tree(rc.parse_tree(written))


def test_the_readme_example_runs_on_the_readmes_tree_as_the_readme_says(tmp_path: Path) -> None:
    text = readme_library_block("json")
    assert rc.dumps_tree(rc.parse_tree(text)) == text

    out = run_example(tmp_path, text)

    reverted = [
        {"node": "lexer", "field": "passes", "old": False, "new": True},
        {"node": "root", "field": "passes", "old": False, "new": True},
    ]
    assert out.splitlines() == ["open root/lexer", "('lexer',) ('root',)", json.dumps(reverted)]
    written = rc.parse_tree((tmp_path / ".runner" / "state" / "tree.json").read_bytes())
    assert written.passes and written.children[0].passes and written.children[0].attempts == 1
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`open root/lexer`, `('lexer',) ('root',)`" in readme


def test_the_readme_example_runs_on_a_complete_tree(tmp_path: Path) -> None:
    root = node("root", node("a", passes=True), passes=True)

    assert run_example(tmp_path, root) == "complete None\n"


# ---------------------------------------------------------------- a source checkout


CHECKOUT_PROGRAM = """
import importlib.util, json, sys
import runner_core as rc
from runner_core.validation.finding import messages
from runner_core.validation.schema import schema_text, schema_findings
print(json.dumps({
    "core": rc.__file__,
    "schemas_package": importlib.util.find_spec("runner_core.schemas") is not None,
    "errors": messages(schema_findings({"id": "root", "order": "first"})),
    "status_schema": json.loads(schema_text("views/status.schema.json"))["title"],
}))
"""


def test_runner_core_imports_and_reads_its_schemas_from_a_source_checkout(tmp_path: Path) -> None:
    # -S: no site initialisation, so neither the venv's editable install (a .pth file) nor any
    # installed copy is on the path; the dependencies come from site-packages as plain
    # directories, runner_core from the checkout alone.
    site_packages = sysconfig.get_paths()["purelib"]
    result = subprocess.run(
        [sys.executable, "-S", "-c", CHECKOUT_PROGRAM],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{ROOT}:{site_packages}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["core"] == str(ROOT / "runner_core" / "__init__.py")
    assert report["schemas_package"] is False
    assert report["errors"] == [
        "$ must contain 'acceptance'",
        "$ must contain 'attempts'",
        "$ must contain 'children'",
        "$ must contain 'goal'",
        "$ must contain 'max_attempts'",
        "$ must contain 'next'",
        "$ must contain 'passes'",
        "$ must contain 'title'",
        "$.order must be integer",
    ]
    assert isinstance(report["status_schema"], str)


def test_the_installed_package_reads_its_schemas_as_resources() -> None:
    assert importlib.util.find_spec("runner_core.schemas") is not None
    files = importlib.import_module("runner_core.validation.schema")._schema_files()
    assert files.joinpath("task_tree", "v1.schema.json").is_file()
