"""Statuses, roles, outcomes and layers in the library's signatures are enums or `Literal`s of
their values, each list of values written once: a string that is none of them fails mypy."""

from __future__ import annotations

import enum
import inspect
import re
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from types import ModuleType

import pytest

import runner_core as rc
import runner_core.testing as testing
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.run.config import GuardMode
from runner_core.run.config_schema import CONFIG_SCHEMA_FILE
from runner_core.tree.model import (
    AgentRole,
    AgentRoleValue,
    AgentStatus,
    AgentStatusValue,
    GuardOutcome,
    GuardOutcomeValue,
    NodeNext,
    NodeNextValue,
)
from runner_core.validation.finding import LAYERS, ValidationLayer
from runner_core.validation.schema import load_schema
from tests.helpers import ROOT

# A parameter or field whose name is, or ends in, one of these words (`guard_mode`) holds a
# status, role, outcome or the like.
DOMAIN_WORDS = frozenset(
    {"status", "guard", "role", "next", "outcome", "kind", "phase", "layer", "mode"}
)


@pytest.mark.parametrize(
    ("values", "members"),
    [
        (NodeNextValue, NodeNext),
        (AgentStatusValue, AgentStatus),
        (GuardOutcomeValue, GuardOutcome),
        (AgentRoleValue, AgentRole),
    ],
)
def test_each_literal_holds_exactly_its_enums_values_in_order(
    values: object, members: type[enum.StrEnum]
) -> None:
    assert typing.get_args(values) == tuple(member.value for member in members)


def test_the_guard_modes_are_the_config_schemas_values_in_order() -> None:
    guard = load_schema(CONFIG_SCHEMA_FILE)["properties"]["guard"]["properties"]["mode"]
    assert typing.get_args(GuardMode) == tuple(guard["enum"])


def test_the_validation_layers_are_the_literals_values_the_tree_layers_first() -> None:
    assert typing.get_args(ValidationLayer) == LAYERS
    assert LAYERS[:3] == ("json", "schema", "invariants")


def annotations_of(value: object) -> dict[str, str]:
    """The annotation of each parameter an exported function or constructor takes, as text
    (a class's annotations may name types imported for type checkers only)."""
    if not callable(value):
        return {}
    try:
        parameters = inspect.signature(value).parameters.values()
    except ValueError:  # a builtin's signature
        return {}
    return {
        parameter.name: (
            parameter.annotation
            if isinstance(parameter.annotation, str)
            else inspect.formatannotation(parameter.annotation)
        )
        for parameter in parameters
    }


@pytest.mark.parametrize(
    ("package", "name"),
    [*((rc, name) for name in rc.__all__), *((testing, name) for name in testing.__all__)],
)
def test_no_exported_name_takes_a_status_role_or_outcome_as_any_string(
    package: ModuleType, name: str
) -> None:
    found = annotations_of(getattr(package, name))
    loose = sorted(
        f"{word}: {annotation}"
        for word, annotation in found.items()
        if word.rsplit("_", 1)[-1] in DOMAIN_WORDS and re.search(r"\bstr\b", annotation)
    )
    assert loose == []


def test_a_journals_role_is_the_agent_role_whichever_way_it_was_given() -> None:
    journal = Journal("run-1", 1, "leaf", "executor", JournalPhase.RUNNING, "", 1, "step")

    assert journal.role is AgentRole.EXECUTOR
    assert journal == Journal(
        "run-1", 1, "leaf", AgentRole.EXECUTOR, JournalPhase.RUNNING, "", 1, "step"
    )


# Each call once with values and once with a typo; only the typos may fail mypy.
SNIPPET = """
from runner_core import Config, Node, apply_state_updates, review_tree_change
from runner_core.iteration.recovery import Journal, JournalPhase
from runner_core.tree.serialization import TreeValidationError
from runner_core.validation.finding import Finding


def calls(tree: Node) -> None:
    apply_state_updates(tree, tree, "a", "done", "pass")
    apply_state_updates(tree, tree, "a", "dnoe", "pass")  # typo
    apply_state_updates(tree, tree, "a", "done", "passed")  # typo
    review_tree_change(tree, tree, "a", "decomposed")
    review_tree_change(tree, tree, "a", "decompose")  # typo
    Node("a", 0, "t", "g", (), "execute", False, 0, 3)
    Node("a", 0, "t", "g", (), "excute", False, 0, 3)  # typo
    Journal("r", 1, "a", "decomposer", JournalPhase.RUNNING, "", 1, "c")
    Journal("r", 1, "a", "decomposr", JournalPhase.RUNNING, "", 1, "c")  # typo
    TreeValidationError("schema", ())
    TreeValidationError("schemas", ())  # typo
    Finding("child_additions", None, None, "code", "message")
    Finding("child_addition", None, None, "code", "message")  # typo
    Config(guard_mode="ratchet")
    Config(guard_mode="rachet")  # typo
"""


CACHE = ("--cache-dir", str(ROOT / ".mypy_cache"))


def test_a_typo_in_a_status_role_outcome_or_layer_fails_mypy(tmp_path: Path) -> None:
    module = tmp_path / "typos.py"
    module.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    typo_lines = {
        number for number, line in enumerate(SNIPPET.splitlines(), 1) if line.endswith("# typo")
    }
    # In a process of its own (mypy raises the interpreter's recursion limit for good), from
    # the checkout, so that it reads runner_core's source and this project's configuration.
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
    assert flagged == typo_lines, checked.stdout + checked.stderr
    assert "[arg-type]" in checked.stdout
