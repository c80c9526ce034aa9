"""Specification of runner_core/validation/_validators.py: the shipped schemas, compiled.

The module is what scripts/gen_validators.py writes from schemas/; after a schema changes,
run `python scripts/gen_validators.py` and commit the result.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import fastjsonschema
import pytest

from runner_core.run import _config_validator
from runner_core.tree import _node_validator as _tree_node
from runner_core.validation import _validators
from runner_core.validation.refusal import SchemaRefusal
from runner_core.validation.schema import load_schema
from tests.helpers import ROOT
from tests.helpers.trees import node

REGENERATE = (
    "run `python scripts/gen_validators.py` and commit runner_core/validation/_validators.py"
)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_validators", ROOT / "scripts" / "gen_validators.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_schema_is_compiled_from_its_current_text() -> None:
    schemas = ROOT / "schemas"
    current = {
        name: hashlib.sha256((schemas / name).read_text(encoding="utf-8").encode()).hexdigest()
        for name in generator().SCHEMA_FILES
    }
    assert current == _validators.SCHEMA_SHA256, REGENERATE


def test_the_module_is_exactly_what_the_generator_writes() -> None:
    if _validators.VERSION != fastjsonschema.VERSION:
        pytest.skip(
            f"generated with fastjsonschema {_validators.VERSION}, "
            f"{fastjsonschema.VERSION} installed"
        )
    committed = (ROOT / "runner_core" / "validation" / "_validators.py").read_text(encoding="utf-8")
    assert generator().generate() == committed, REGENERATE


DOCUMENTS: dict[str, list[Any]] = {
    "task_tree/v1.schema.json": [
        node("root", node("root.1", passes=True)),
        {**node("root"), "order": "first"},
        {**node("root"), "extra": 1},
        node("root", {"id": ""}),
        [],
    ],
    "executor_output.schema.json": [
        {"status": "done", "summary": "ok"},
        {"status": "finished", "summary": "ok"},
        {"status": "done"},
        "done",
    ],
    "decomposer_output.schema.json": [
        {
            "summary": "s",
            "children": [{"title": "t", "goal": "g", "acceptance": [], "next": "execute"}],
        },
        {"summary": "s", "children": [{"title": "t"}]},
        {"children": []},
    ],
}


def outcome(validate: Any, document: Any) -> str:
    try:
        validate(json.loads(json.dumps(document)))
    except (fastjsonschema.JsonSchemaValueException, SchemaRefusal) as error:
        return f"{error.message} [{error.rule}]"
    return "valid"


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_each_compiled_validator_judges_like_one_compiled_at_run_time(name: str) -> None:
    at_run_time = fastjsonschema.compile(dict(load_schema(name)))
    ahead_of_time = _validators.VALIDATORS[name]
    for document in DOCUMENTS[name]:
        assert outcome(ahead_of_time, document) == outcome(at_run_time, document)


def test_the_tree_node_module_is_exactly_what_the_generator_writes() -> None:
    committed = (ROOT / "runner_core" / "tree" / "_node_validator.py").read_text(encoding="utf-8")
    assert generator().generate_tree_node() == committed, REGENERATE


def test_the_tree_node_module_is_generated_from_the_current_tree_schema() -> None:
    text = (ROOT / "schemas" / "task_tree" / "v1.schema.json").read_text(encoding="utf-8")
    assert hashlib.sha256(text.encode()).hexdigest() == _tree_node.SCHEMA_SHA256, REGENERATE


def test_the_config_module_is_exactly_what_the_generator_writes() -> None:
    text = (ROOT / "schemas" / "config.schema.json").read_text(encoding="utf-8")
    assert {
        "config.schema.json": hashlib.sha256(text.encode()).hexdigest()
    } == _config_validator.SCHEMA_SHA256, REGENERATE
    if _config_validator.VERSION != fastjsonschema.VERSION:
        pytest.skip(f"generated with fastjsonschema {_config_validator.VERSION}")
    committed = (ROOT / "runner_core" / "run" / "_config_validator.py").read_text(encoding="utf-8")
    assert generator().generate_config() == committed, REGENERATE


@pytest.mark.parametrize(
    ("definition", "refusal"),
    [
        ({"type": "string", "pattern": "^a"}, "no check for ['pattern']"),
        ({"type": "number"}, "no check for type 'number'"),
    ],
)
def test_the_generator_refuses_a_node_field_it_cannot_check_strictly(
    definition: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(SystemExit) as raised:
        generator()._condition("v0", definition)

    assert refusal in str(raised.value)


def test_the_generated_modules_pass_mypy_strict_without_the_projects_configuration(
    tmp_path: Path,
) -> None:
    # A library user's mypy reads its own configuration, not this project's pyproject.toml: the
    # generated modules must say for themselves how they are checked.
    empty = tmp_path / "mypy.ini"
    empty.write_text("[mypy]\n", encoding="utf-8")
    modules = [
        str(ROOT / "runner_core" / "validation" / "_validators.py"),
        str(ROOT / "runner_core" / "tree" / "_node_validator.py"),
    ]
    # In a process of its own: mypy raises the interpreter's recursion limit for good.
    options = ["--strict", "--config-file", str(empty), "--cache-dir", str(tmp_path / "cache")]
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", *options, *modules],
        capture_output=True,
        text=True,
        check=False,
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr
