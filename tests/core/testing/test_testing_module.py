"""runner_core.testing as a user meets it: optional Hypothesis, shipped in the wheel, the
README example running, and assertions that speak the validators' words."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import attrs
import pytest

from runner_core import AgentStatus, GuardOutcome, Node, NodeNext, dumps_tree, tree_to_json
from runner_core.testing import (
    assert_runner_owned_unchanged,
    assert_transition_allowed,
    assert_valid_tree,
)
from tests.helpers import ROOT

# Makes `import hypothesis` fail in a fresh interpreter, as in a venv without it.
WITHOUT_HYPOTHESIS = """
import sys

class NoHypothesis:
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoHypothesis())
"""


def run_python(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_runner_core_and_every_public_name_load_without_hypothesis() -> None:
    code = WITHOUT_HYPOTHESIS + (
        "import runner_core\n"
        "for name in runner_core.__all__:\n"
        "    getattr(runner_core, name)\n"
        "assert not any(m.split('.')[0] == 'hypothesis' for m in sys.modules), 'loaded'\n"
        "print('ok')\n"
    )
    done = run_python(code)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_importing_the_testing_module_without_hypothesis_says_what_to_install() -> None:
    code = WITHOUT_HYPOTHESIS + (
        "try:\n    import runner_core.testing\nexcept ImportError as error:\n    print(error)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("runner_core.testing needs Hypothesis: pip install 'runner[testing]'\n")


def test_every_runner_core_package_is_listed_for_the_wheel() -> None:
    """setuptools ships only the packages pyproject.toml names: runner_core.testing too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "runner_core").rglob("__init__.py")
    }
    assert found <= listed
    assert config["project"]["optional-dependencies"]["testing"] == ["hypothesis>=6.100"]


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Testing your own tools", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the section has a python example"
    return found.group(1)


def test_the_testing_module_exports_at_most_fifteen_names_each_in_the_readme() -> None:
    import runner_core.testing

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Testing your own tools", 1)[1].split("\n## ", 1)[0]
    exported = runner_core.testing.__all__
    assert len(exported) <= 15
    assert sorted(name for name in exported if f"`{name}" not in section) == []


def test_the_readme_example_passes_under_pytest(tmp_path: Path) -> None:
    example = readme_example()
    assert len(example.strip().splitlines()) <= 14
    (tmp_path / "test_readme_example.py").write_text(example, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_readme_example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


# ---------------------------------------------------------------- assertions


def node(node_id: str, *children: Node, passes: bool = False, attempts: int = 0) -> Node:
    return Node(node_id, 0, "t", "g", (), NodeNext.EXECUTE, passes, attempts, 2, children)


DONE, RETRY = AgentStatus.DONE, AgentStatus.RETRY
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ("", "tree is not valid JSON: the file is empty"),
        (b"\xff", "tree is not valid JSON: not UTF-8 (byte 0: invalid start byte)"),
        (
            {**tree_to_json(node("r")), "order": "1"},
            "tree schema validation failed: $.order must be integer",
        ),
        (
            node("r", node("b"), node("a")),
            "tree invariants failed: r: children must be sorted by (order,id)",
        ),
        (node("r", attempts=3), "tree invariants failed: r: attempts 3 exceeds max_attempts 2"),
    ],
)
def test_assert_valid_tree_fails_with_the_runners_line(tree: object, message: str) -> None:
    with pytest.raises(AssertionError) as failed:
        assert_valid_tree(tree)  # type: ignore[arg-type]
    assert str(failed.value) == message


def test_assert_valid_tree_returns_the_tree_it_reads() -> None:
    tree = node("r", node("a"), node("b"))
    for form in (tree, tree_to_json(tree), dumps_tree(tree), dumps_tree(tree).encode()):
        assert assert_valid_tree(form) == tree


def test_assert_runner_owned_unchanged_names_each_moved_field() -> None:
    prev = node("r", node("a", passes=True), node("b"), passes=False)
    assert_runner_owned_unchanged(prev, attrs.evolve(prev, title="retitled"))
    moved = node("r", node("a", passes=True), node("b", attempts=2), passes=False)
    with pytest.raises(AssertionError) as failed:
        assert_runner_owned_unchanged(prev, moved)
    assert str(failed.value) == (
        "runner-owned fields changed: node 'b' attempts is 2, the runner's is 0"
    )


PREV = node("r", node("a", passes=True), node("b"))


@pytest.mark.parametrize(
    ("next_tree", "status", "guard", "message"),
    [
        (PREV, RETRY, PASS, "no transition for status=retry guard=pass"),
        (PREV, DONE, FAIL, "node 'b' attempts is 0, the runner's is 1"),
        (
            node("r", node("a", passes=True), node("b", passes=True)),
            DONE,
            FAIL,
            "node 'b' passes is True, the runner's is False; "
            "node 'b' attempts is 0, the runner's is 1",
        ),
        (node("r", node("b", attempts=1)), RETRY, SKIPPED, "passed node 'a' missing in next tree"),
        (
            node("r", node("a", passes=True), node("b", node("b.1"))),
            DONE,
            PASS,
            "node 'b' gained child 'b.1' (no node may gain children in execute mode); "
            "status=done but selected node 'b' gained children (prev=0, next=1)",
        ),
    ],
)
def test_assert_transition_allowed_fails_with_the_validators_messages(
    next_tree: Node, status: AgentStatus, guard: GuardOutcome, message: str
) -> None:
    with pytest.raises(AssertionError) as failed:
        assert_transition_allowed(PREV, next_tree, "b", status, guard)
    assert str(failed.value) == message


def test_assert_transition_allowed_accepts_the_tables_rows() -> None:
    assert_transition_allowed(
        PREV, node("r", node("a", passes=True), node("b", attempts=1)), "b", DONE, FAIL
    )
    done = node("r", node("a", passes=True), node("b", passes=True), passes=True)
    assert_transition_allowed(PREV, done, "b", DONE, PASS)
    assert_transition_allowed(PREV, PREV, "b", DONE, SKIPPED)
