"""Properties of `runner audit`, the trailers and the chain: a runner-made history is clean,
any single tampering with a runner-owned field is found, trailers carry a record exactly."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core import dumps_tree, parse_tree
from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import TREE_PATH, CommitFacts
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.trailers import (
    parse_trailers,
    record_from_trailers,
    record_trailers,
    render_trailers,
)
from runner_core.testing import Run, runs
from runner_core.testing.commits import run_commits
from runner_core.testing.trees import preorder
from runner_core.tree.model import Node, rebuild_postorder, with_children

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


def _mutated(tree: Node, node_id: str, edit: Callable[[Node], Node]) -> Node:
    """`tree` with its node `node_id` replaced by `edit` of it."""

    def change(node: Node, children: tuple[Node, ...]) -> Node:
        rebuilt = with_children(node, children)
        return edit(rebuilt) if node.id == node_id else rebuilt

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
    mutated = dumps_tree(_mutated(tree, node_id, lambda node: _tampered(node, field))).encode()
    relinked = _relink(run.run_id, _replaced(commits, index, tree_json=mutated))
    report = audit_run(run.run_id, start, relinked)
    hits = [f for f in report.findings if f.commit == commits[index].sha and f.node == node_id]
    assert hits, report.lines()


def _replaced(
    commits: tuple[CommitFacts, ...],
    index: int,
    *,
    message: str | None = None,
    tree_json: bytes | None = None,
) -> tuple[CommitFacts, ...]:
    """The commits with commit `index` given this message or tree bytes."""
    commit = commits[index]
    changed = attrs.evolve(
        commit,
        message=commit.message if message is None else message,
        tree_json=commit.tree_json if tree_json is None else tree_json,
    )
    return (*commits[:index], changed, *commits[index + 1 :])


def _tampered(node: Node, field: str) -> Node:
    """`node` with its runner-owned `field` (passes or attempts) changed to another value."""
    if field == "passes":
        return attrs.evolve(node, passes=not node.passes)
    return attrs.evolve(node, attempts=_other_attempts(node))


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


def _hand_commit(commits: tuple[CommitFacts, ...], tree: Node) -> CommitFacts:
    last = commits[-1]
    return CommitFacts(
        "hand", "fix tree\n", dumps_tree(tree).encode(), last.run_state_json, (TREE_PATH,)
    )


def _open_leaf_runs() -> st.SearchStrategy[Run]:
    return runs(max_iterations=6).filter(
        lambda run: any(n.is_leaf and not n.passes for n, _ in preorder(run.trees[-1]))
    )


@SETTINGS
@given(_open_leaf_runs())
def test_a_hand_flipped_passes_is_a_hand_edit_and_an_untraced_pass(run: Run) -> None:
    start, commits = run_commits(run)
    final = run.trees[-1]
    leaf = next(n for n, _ in preorder(final) if n.is_leaf and not n.passes)
    flipped = _mutated(final, leaf.id, lambda n: attrs.evolve(n, passes=True))
    report = audit_run(run.run_id, start, (*commits, _hand_commit((start, *commits), flipped)))
    whats = {(f.commit, f.node, f.what) for f in report.findings}
    assert ("hand", leaf.id, "hand edit passes false -> true") in whats
    assert any(
        f.node == leaf.id and f.what.startswith("passed leaf without") for f in report.findings
    )


@SETTINGS
@given(
    runs(max_iterations=6).filter(lambda run: any(n.attempts for n, _ in preorder(run.trees[-1])))
)
def test_an_attempt_reset_is_a_hand_edit_naming_node_and_field(run: Run) -> None:
    start, commits = run_commits(run)
    final = run.trees[-1]
    node = next(n for n, _ in preorder(final) if n.attempts)
    reset = _mutated(final, node.id, lambda n: attrs.evolve(n, attempts=0))
    report = audit_run(run.run_id, start, (*commits, _hand_commit((start, *commits), reset)))
    assert [f.line for f in report.findings] == [
        f"audit: finding commit=hand iter=- node={node.id} hand edit attempts {node.attempts} -> 0"
    ]


@SETTINGS
@given(runs(max_iterations=6).filter(lambda run: len(run.steps) >= 2), st.data())
def test_a_dropped_iteration_breaks_numbering_and_chain(run: Run, data: st.DataObject) -> None:
    start, commits = run_commits(run)
    dropped = data.draw(st.integers(0, len(commits) - 2))
    kept = commits[:dropped] + commits[dropped + 1 :]
    report = audit_run(run.run_id, start, kept)
    whats = {f.what for f in report.findings if f.commit == commits[dropped + 1].sha}
    assert "Runner-Chain does not follow from the previous iteration" in whats
    assert any("an iteration is missing or repeated" in what for what in whats)


@SETTINGS
@given(runs(max_iterations=6).filter(lambda run: len(run.steps) >= 1), st.data())
def test_an_edited_trailer_breaks_the_chain_of_its_commit(run: Run, data: st.DataObject) -> None:
    start, commits = run_commits(run)
    index = data.draw(st.integers(0, len(commits) - 1))
    edited = commits[index].message.replace("Runner-Duration-Ms: ", "Runner-Duration-Ms: 1")
    report = audit_run(run.run_id, start, _replaced(commits, index, message=edited))
    assert [f.line for f in report.findings] == [
        f"audit: finding commit={commits[index].sha[:8]} iter={index + 1} node=- "
        "Runner-Chain does not follow from the previous iteration"
    ]


def _passed_in_both(run: Run) -> list[tuple[int, str]]:
    return [
        (index, node.id)
        for index, step in enumerate(run.steps)
        for node, _ in preorder(step.tree)
        if node.passes and any(n.id == node.id and n.passes for n, _ in preorder(run.trees[index]))
    ]


@SETTINGS
@given(runs(max_iterations=6).filter(lambda run: bool(_passed_in_both(run))), st.data())
def test_an_iteration_that_edited_a_passed_node_is_found(run: Run, data: st.DataObject) -> None:
    """Even with the chain re-linked over the edited bytes."""
    start, commits = run_commits(run)
    index, node_id = data.draw(st.sampled_from(_passed_in_both(run)))
    edited = _mutated(
        run.steps[index].tree, node_id, lambda n: attrs.evolve(n, title="edited by hand")
    )
    tampered = _replaced(commits, index, tree_json=dumps_tree(edited).encode())
    report = audit_run(run.run_id, start, _relink(run.run_id, tampered))
    assert any(
        f.commit == commits[index].sha and f.node == node_id and "changed in next tree" in f.what
        for f in report.findings
    ), report.lines()


@SETTINGS
@given(runs(max_iterations=6).filter(lambda run: len(run.steps) >= 1), st.data())
def test_a_damaged_trailer_is_one_finding_naming_it(run: Run, data: st.DataObject) -> None:
    """Besides it, only the pass that commit proved, if any, goes unproven."""
    start, commits = run_commits(run)
    index = data.draw(st.integers(0, len(commits) - 1))
    damaged = commits[index].message.replace("Runner-Exec: ", "Runner-Exec: x")
    report = audit_run(run.run_id, start, _replaced(commits, index, message=damaged))
    got = parse_trailers(damaged)["Runner-Exec"]
    assert [(f.commit, f.what) for f in report.findings][:1] == [
        (
            commits[index].sha,
            f"damaged trailer Runner-Exec: must be a non-negative integer, got {got!r}",
        )
    ]
    assert all(
        f.node == run.steps[index].record.node_id and f.what.startswith("passed leaf without")
        for f in report.findings[1:]
    ), (index, report.lines())
