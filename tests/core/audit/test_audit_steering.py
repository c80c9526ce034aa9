"""What `runner audit` accepts of the operator's steering commits: `runner config set|unset`
(config.toml alone, only the key its Runner-Config trailer names), `runner answer`, and the
node commands `add` and `edit`; a hand edit of config.toml is still a finding."""

from __future__ import annotations

import attrs
import pytest

from runner_core import dumps_tree
from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import CONFIG_PATH, TREE_PATH, CommitFacts
from runner_core.run.config import Config, render_config
from runner_core.run.config_change import config_commit_message
from runner_core.tree.model import Node
from tests.helpers.trees import tree

START = tree("root", tree("a"), tree("b", passes=True))
DEFAULT_TOML = render_config(Config()).encode()
RAISED_TOML = render_config(attrs.evolve(Config(), max_iterations=500)).encode()
RAISED_TWICE = render_config(attrs.evolve(Config(), max_iterations=500, max_attempts_default=9))


def commit(
    sha: str,
    message: str,
    state: Node = START,
    touched: tuple[str, ...] = (),
    config: bytes = DEFAULT_TOML,
) -> CommitFacts:
    return CommitFacts(sha * 40, message, dumps_tree(state).encode(), b"{}", touched, config)


START_COMMIT = commit("s", "chore(loop): start run run-1\n")
CONFIG_MESSAGE = config_commit_message("run-1", "set", "max_iterations", "ann <a@x>")


def test_a_config_commit_of_the_named_key_is_an_operator_action() -> None:
    change = commit("c", CONFIG_MESSAGE, touched=(CONFIG_PATH,), config=RAISED_TOML)
    report = audit_run("run-1", START_COMMIT, (change,))
    assert report.findings == ()
    assert [(entry.op, entry.actor) for entry in report.operator_actions] == [
        ("config", "ann <a@x>")
    ]


def test_a_config_commit_changing_another_key_too_is_a_finding() -> None:
    change = commit("c", CONFIG_MESSAGE, touched=(CONFIG_PATH,), config=RAISED_TWICE.encode())
    (finding,) = audit_run("run-1", START_COMMIT, (change,)).findings
    assert finding.what == (
        "config commit for max_iterations changed more than max_iterations "
        "(a hand edit of .runner/state/config.toml)"
    )


@pytest.mark.parametrize("config", [b"max_iterations = ", b"x = " + b"[" * 5_000 + b"]" * 5_000])
def test_a_config_commit_leaving_a_config_that_does_not_read_is_a_finding(config: bytes) -> None:
    change = commit("c", CONFIG_MESSAGE, touched=(CONFIG_PATH,), config=config)
    (finding,) = audit_run("run-1", START_COMMIT, (change,)).findings
    assert (
        finding.what
        == "config commit for max_iterations: .runner/state/config.toml is not valid TOML"
    )


def test_a_hand_edit_of_config_toml_is_still_a_finding() -> None:
    edit = commit("e", "raise the limit\n", touched=(CONFIG_PATH,), config=RAISED_TOML)
    (finding,) = audit_run("run-1", START_COMMIT, (edit,)).findings
    assert finding.what == "hand edit .runner/state/config.toml"


def test_a_config_trailer_on_a_commit_touching_more_is_a_hand_edit() -> None:
    edit = commit("e", CONFIG_MESSAGE, touched=(CONFIG_PATH, TREE_PATH), config=RAISED_TOML)
    findings = audit_run("run-1", START_COMMIT, (edit,)).findings
    assert "hand edit .runner/state/config.toml" in [finding.what for finding in findings]


def test_an_answer_commit_is_an_operator_action() -> None:
    message = "chore(runner): answer run run-1\n\nRunner-Run: run-1\nRunner-Actor: ann\n"
    touched = (".runner/state/guidance.md", ".runner/state/questions.md")
    report = audit_run("run-1", START_COMMIT, (commit("a", message, touched=touched),))
    assert report.findings == ()
    assert [entry.op for entry in report.operator_actions] == ["answer"]


def _node_message(op: str, node_id: str) -> str:
    return (
        f"chore(runner): node {op} {node_id} run run-1\n\nRunner-Run: run-1\nRunner-Op: {op}\n"
        f"Runner-Node: {node_id}\nRunner-Actor: ann\nRunner-Next-Iter: 1\n"
    )


def test_node_add_may_add_a_fresh_child_under_its_node_only() -> None:
    added = tree("root", tree("a", tree("a.1")), tree("b", passes=True))
    ok = commit("n", _node_message("add", "a"), added, (TREE_PATH,))
    assert audit_run("run-1", START_COMMIT, (ok,)).findings == ()
    elsewhere = commit("n", _node_message("add", "root"), added, (TREE_PATH,))
    assert audit_run("run-1", START_COMMIT, (elsewhere,)).findings != ()


def test_node_edit_may_change_text_but_not_attempts() -> None:
    edited = tree("root", tree("a", title="New title"), tree("b", passes=True))
    ok = commit("n", _node_message("edit", "a"), edited, (TREE_PATH,))
    assert audit_run("run-1", START_COMMIT, (ok,)).findings == ()
    reset = tree("root", tree("a", title="New", max_attempts=9), tree("b", passes=True))
    bad = commit("n", _node_message("edit", "a"), reset, (TREE_PATH,))
    assert audit_run("run-1", START_COMMIT, (bad,)).findings != ()
