"""Properties of `runner audit`, the trailers and the chain: a runner-made history is clean,
any single tampering with a runner-owned field is found, trailers carry a record exactly."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core import dumps_tree, parse_tree
from runner_core.audit import CommitFacts, audit_run
from runner_core.chain import chain_link, chain_seed
from runner_core.model import Node, rebuild_postorder, with_children
from runner_core.testing import Run, preorder, runs
from runner_core.testing.commits import run_commits
from runner_core.trailers import parse_trailers, record_from_trailers, record_trailers, render_trailers

SETTINGS = settings(max_examples=100, deadline=None)


@SETTINGS
@given(runs(max_iterations=10))
def test_the_audit_of_any_run_the_core_made_is_clean(run: Run) -> None:
    """Every run driven through the pure iteration, as the runner commits it, audits clean."""
    start, commits = run_commits(run)
    report = audit_run(run.run_id, start, commits)
    assert report.findings == (), report.lines()
    assert report.iterations == len(run.steps)


@SETTINGS
@given(runs(max_iterations=10))
def test_trailers_carry_every_record_exactly(run: Run) -> None:
    """record_from_trailers(parse(render(record))) == record, for every record of a run."""
    for step in run.steps:
        message = "subject\n\n" + render_trailers(record_trailers(step.record))
        assert record_from_trailers(parse_trailers(message)) == step.record


def _mutated(tree: Node, node_id: str, field: str, value: object) -> Node:
    def change(node: Node, children: tuple[Node, ...]) -> Node:
        rebuilt = with_children(node, children)
        return attrs.evolve(rebuilt, **{field: value}) if node.id == node_id else rebuilt

    return rebuild_postorder(tree, change)


@st.composite
def tampered_runs(draw: st.DrawFn) -> tuple[Run, int, str, str]:
    run = draw(runs(max_iterations=8).filter(lambda run: len(run.steps) > 0))
    index = draw(st.integers(0, len(run.steps) - 1))
    node = draw(st.sampled_from([node for node, _ in preorder(run.steps[index].tree)]))
    field = draw(st.sampled_from(("passes", "attempts")))
    return run, index, node.id, field


@SETTINGS
@given(tampered_runs())
def test_any_single_runner_owned_field_mutation_is_found_on_its_node(
    case: tuple[Run, int, str, str],
) -> None:
    """Changing passes or attempts of any node in any iteration commit is a finding that names
    the commit and the node, besides the broken chain (the chain is re-linked to hide it)."""
    run, index, node_id, field = case
    start, commits = run_commits(run)
    tree = parse_tree(commits[index].tree_json or b"")
    node = next(node for node, _ in preorder(tree) if node.id == node_id)
    value: object = (not node.passes) if field == "passes" else _other_attempts(node)
    tampered = list(commits)
    tampered[index] = attrs.evolve(
        commits[index], tree_json=dumps_tree(_mutated(tree, node_id, field, value)).encode()
    )
    relinked = _relink(run.run_id, tuple(tampered))
    report = audit_run(run.run_id, start, relinked)
    hits = [f for f in report.findings if f.commit == commits[index].sha and f.node == node_id]
    assert hits, report.lines()


def _other_attempts(node: Node) -> int:
    return node.attempts + 1 if node.attempts < node.max_attempts else node.attempts - 1


def _relink(run_id: str, commits: tuple[CommitFacts, ...]) -> tuple[CommitFacts, ...]:
    """The commits with a chain recomputed over their (tampered) bytes, as a forger would."""
    chain = chain_seed(run_id)
    relinked = []
    for commit in commits:
        trailers = parse_trailers(commit.message)
        record = record_from_trailers(trailers)
        chain = chain_link(chain, record, commit.tree_json or b"")
        subject = commit.message.split("\n", 1)[0]
        body = render_trailers((*record_trailers(record), ("Runner-Chain", chain)))
        relinked.append(attrs.evolve(commit, message=f"{subject}\n\n{body}"))
    return tuple(relinked)
