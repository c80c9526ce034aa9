"""Fuzzing the real CLI with broken trees, configs, frontmatter and agent outputs.

Hypothesis draws the input; every example is one real `runner` process in a temp git repository.
Whatever the input, the command ends in 0 or 1, prints no traceback, puts a failure on exactly
one stderr line, agrees with runner_core about whether the input is usable, and leaves the state
files byte-identical (validate) or, for unusable agent output, tree.json unchanged with no
attempt consumed (step). Examples are few (each costs a process start); CI runs the same few.
"""

from __future__ import annotations

import json
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner_core import ConfigError, TreeValidationError, parse_config, parse_tree
from runner_core.iteration.plan import AgentOutputError, parse_executor_output
from runner_core.run.identity import RunIdentityError, goal_run_id
from runner_core.tree.serialization import loads_json_strictly
from runner_core.views.text import error_line
from runner_shell.errors import UserFacingError
from runner_shell.step.repository_checks import check_programs
from tests.helpers.crash import assert_state_valid, attempts, cli, state_bytes
from tests.helpers.e2e import PYTHON, Project, ProjectFactory, node

FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TREE = node("root", next_="decompose", children=[node("a"), node("b", order=1)])


@pytest.fixture(scope="module")
def new_project(
    make_project: ProjectFactory, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], Project]:
    """A fresh started project per example (function-scoped fixtures do not mix with @given)."""
    base = tmp_path_factory.mktemp("fuzz")

    def make() -> Project:
        project = make_project(Path(tempfile.mkdtemp(dir=base)), "started")
        project.prepare(TREE)
        return project

    return make


def assert_cli_says(result: Any, problem: str | None) -> None:
    """Exit 0 and a quiet stderr when `problem` is None, else exit 1 with exactly that line."""
    assert "Traceback" not in result.stderr
    if problem is None:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        return
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr == f"runner: {error_line(problem)}\n"


# ---------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
# Ids a hand edit or an agent might write: '/', line breaks, control characters, the empty id.
hostile_ids = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["", "a/b", "a\nb", "\x00", "\x1b[31m", "\u2028", "a", "b", "x" * 1001]),
)
NODE_KEYS = ("id", "order", "title", "goal", "acceptance", "next", "passes", "attempts")
FIELDS = (*NODE_KEYS, "max_attempts", "children", "colour")


@st.composite
def mutated_trees(draw: st.DrawFn) -> bytes:
    """A small valid tree with a few fields of its nodes broken, retyped, renamed or removed."""
    tree = json.loads(json.dumps(TREE))
    nodes = [tree, *tree["children"]]
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(nodes))
        field = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["drop", "any", "id", "number"]))
        if action == "drop":
            target.pop(field, None)
        elif action == "id":
            target["id"] = draw(hostile_ids)
        elif action == "number":
            target[field] = draw(st.integers(-2, 2) | st.sampled_from([2**64, 1.5, True]))
        else:
            target[field] = draw(json_values)
    return json.dumps(tree, indent=draw(st.sampled_from([None, 2]))).encode("utf-8")


broken_trees = st.one_of(
    mutated_trees(),
    json_values.map(lambda value: json.dumps(value).encode("utf-8")),
    st.binary(max_size=64),
    st.integers(0, 400).map(lambda cut: json.dumps(TREE, indent=2).encode()[:cut]),
)

CONFIG_KEYS = (
    "max_attempts_default",
    "max_iterations",
    "iteration_timeout_secs",
    "executor_output_limit_bytes",
    "guard_output_limit_bytes",
    "retries",
)
toml_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.text(max_size=6), max_size=3),
)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)  # a JSON string or array of strings is (nearly always) TOML


@st.composite
def broken_configs(draw: st.DrawFn) -> str:
    lines = [
        f"{key} = {toml_value(draw(toml_values))}"
        for key in draw(st.lists(st.sampled_from(CONFIG_KEYS), max_size=3, unique=True))
    ]
    guard = draw(
        st.sampled_from([[PYTHON, "-c", "pass"], [], [""], ["/nonexistent"], ["just", "ci"]])
        | st.lists(st.text(max_size=5), max_size=2)
    )
    agent = draw(st.sampled_from([[PYTHON, "-c", "pass"], ["./README.md"], []]))
    lines += ["[guard]", f"command = {toml_value(guard)}", "[agent]"]
    lines += [f"backend = {json.dumps(draw(st.sampled_from(['command', 'codex', 'gpt'])))}"]
    lines += [f"command = {toml_value(agent)}"]
    if draw(st.booleans()):
        index = draw(st.integers(0, len(lines)))
        lines.insert(index, draw(st.text(max_size=12).filter(lambda t: "\n" not in t)))
    return "\n".join(lines) + "\n"


@st.composite
def broken_goals(draw: st.DrawFn, run_id: str) -> str:
    choices = st.one_of(
        st.just("---"),
        st.just(f"id: {run_id}"),
        st.just("id: .."),
        st.builds(lambda value: f"id: {value}", st.text(max_size=8)),
        st.builds(
            lambda key, value: f"{key}: {value}",
            st.from_regex(r"[a-z]{1,5}", fullmatch=True),
            st.text(max_size=6),
        ),
        st.text(max_size=10),
    )
    lines = draw(
        st.lists(choices.filter(lambda line: "\n" not in line and "\r" not in line), max_size=6)
    )
    return "\n".join(lines) + "\n# Goal\n"


executor_outputs = st.one_of(
    st.fixed_dictionaries(
        {
            "status": st.sampled_from(["done", "retry", "decomposed", "", "DONE"]) | json_values,
            "summary": st.text(max_size=10) | json_values,
        },
        optional={"extra": json_values},
    ).map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=20),
    st.sampled_from(['{"status": "done", "summary": "\\ud800"}', "[" * 5000 + "]" * 5000]),
)


# ---------------------------------------------------------------- properties


def expected_tree_problem(text: bytes) -> str | None:
    try:
        parse_tree(text)
    except TreeValidationError as error:
        return f".runner/state/tree.json: {error}"
    return None


@FUZZ
@given(text=broken_trees)
def test_validate_on_any_tree_text_agrees_with_the_core(
    new_project: Callable[[], Project], text: bytes
) -> None:
    project = new_project()
    project.tree_path.write_bytes(text)
    before = state_bytes(project)

    result = cli(project, "validate")

    assert_cli_says(result, expected_tree_problem(text))
    assert state_bytes(project) == before


def expected_config_problem(project: Project, text: str) -> str | None:
    name = ".runner/state/config.toml"
    try:
        config = parse_config(tomllib.loads(text))
        check_programs(config, project.root)
    except tomllib.TOMLDecodeError as error:
        return f"{name} is not valid TOML: {error}"
    except ConfigError as error:
        return f"{name}: {error}"
    except UserFacingError as error:
        return str(error)
    return None


@FUZZ
@given(text=broken_configs())
def test_validate_on_any_config_agrees_with_the_core(
    new_project: Callable[[], Project], text: str
) -> None:
    project = new_project()
    project.config_path.write_text(text, encoding="utf-8")
    before = state_bytes(project)

    result = cli(project, "validate")

    assert_cli_says(result, expected_config_problem(project, text))
    assert state_bytes(project) == before


@FUZZ
@given(data=st.data())
def test_validate_on_any_frontmatter_accepts_only_the_runs_own_id(
    new_project: Callable[[], Project], data: st.DataObject
) -> None:
    project = new_project()
    text = data.draw(broken_goals(project.run_id))
    project.goal_path.write_text(text, encoding="utf-8")
    before = state_bytes(project)

    result = cli(project, "validate")

    try:
        goal_id = goal_run_id(text)
    except RunIdentityError as error:
        assert_cli_says(result, f".runner/GOAL.md: {error}")
    else:
        assert (result.returncode == 0) == (goal_id == project.run_id), result.stderr
        assert_cli_says(
            result,
            None
            if goal_id == project.run_id
            else f"run_state.json run_id '{project.run_id}' does not match GOAL.md id "
            f"'{goal_id or ''}' (run 'runner start')",
        )
    assert state_bytes(project) == before


def expected_output_problem(text: str) -> str | None:
    if not text.strip():
        return "is empty"
    try:
        parse_executor_output(loads_json_strictly(text))
    except AgentOutputError as error:
        return str(error)
    except ValueError:
        return "executor agent output is not JSON"
    return None


@FUZZ
@given(text=executor_outputs)
def test_step_on_any_agent_output_never_touches_the_tree_unless_it_is_valid(
    new_project: Callable[[], Project], text: str
) -> None:
    project = new_project()
    project.agent_script({1: {"output_text": text}})
    # The fake agent writes the text as UTF-8; an escape like \ud800 stays an escape.
    tree_before = project.tree_path.read_bytes()

    result = cli(project, "step")

    assert "Traceback" not in result.stderr
    problem = expected_output_problem(text)
    tree = assert_state_valid(project)
    assert project.status() == ""
    assert project.run_state()["next_iter"] == 2
    if problem is None:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        return
    assert result.returncode == 1, result.stdout
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("runner: runner error: ")
    assert problem in result.stderr
    assert project.tree_path.read_bytes() == tree_before
    assert set(attempts(tree).values()) == {0}
