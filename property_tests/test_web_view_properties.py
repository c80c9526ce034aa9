"""Properties of `runner serve`'s core (runner_core.web_view): roll-ups add up, Host checks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history import ExecutionHistory, ExecutionRecord, TokenUsage
from runner_core.model import AgentRole, AgentStatus, GuardOutcome, Node
from runner_core.reports import canonical_preorder
from runner_core.testing import trees
from runner_core.web_view import allowed_hosts, node_detail, rollups

SETTINGS = settings(max_examples=200, deadline=None)
token_usages = st.none() | st.builds(
    TokenUsage, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)
)
costs = st.none() | st.integers(0, 10**4).map(lambda cents: cents / 100)


@st.composite
def trees_and_histories(draw: st.DrawFn) -> tuple[Node, ExecutionHistory]:
    tree = draw(trees(max_nodes=12))
    ids = [node.id for node, _, _ in canonical_preorder(tree)]
    records: list[ExecutionRecord] = []
    executions: dict[str, int] = {}
    for iteration, node_id in enumerate(draw(st.lists(st.sampled_from(ids), max_size=15)), 1):
        executions[node_id] = executions.get(node_id, 0) + 1
        records.append(
            ExecutionRecord(
                run_id="run-a",
                node_id=node_id,
                execution=executions[node_id],
                iteration=iteration,
                role=AgentRole.EXECUTOR,
                started_at="2026-01-01T00:00:00+00:00",
                ended_at="2026-01-01T00:00:01+00:00",
                status=AgentStatus.DONE,
                guard=GuardOutcome.PASS,
                error_kind=None,
                error=None,
                tokens=draw(token_usages),
                cost_usd=draw(costs),
                duration_ms=1000,
                attempts_before=0,
                attempts_after=0,
                backend="command",
            )
        )
    return tree, ExecutionHistory.of(records)


@SETTINGS
@given(trees_and_histories())
def test_a_rollup_is_its_own_executions_plus_its_childrens_rollups(
    case: tuple[Node, ExecutionHistory],
) -> None:
    tree, history = case
    rolled = rollups(tree, history)

    assert set(rolled) == {node.id for node, _, _ in canonical_preorder(tree)}
    for node, _, _ in canonical_preorder(tree):
        own = history.records_for(node.id)
        for kind in ("input", "output", "cached"):
            expected = sum(getattr(r.tokens, kind) for r in own if r.tokens is not None)
            expected += sum(rolled[child.id]["tokens"][kind] for child in node.children)
            assert rolled[node.id]["tokens"][kind] == expected
    everything = sum(r.cost_usd or 0.0 for r in history.records)
    assert abs(rolled[tree.id]["cost_usd"] - everything) < 1e-6


@SETTINGS
@given(trees_and_histories())
def test_a_node_detail_lists_exactly_its_executions_in_order(
    case: tuple[Node, ExecutionHistory],
) -> None:
    tree, history = case
    for node, path, _ in canonical_preorder(tree):
        detail = node_detail(tree, history, node.id)
        assert detail is not None
        assert detail["path"] == path
        assert [e["iteration"] for e in detail["executions"]] == list(
            history.iterations_of(node.id)
        )
    assert node_detail(tree, history, "no such node") is None


hosts = st.sampled_from(
    ("127.0.0.1", "127.0.0.2", "localhost", "::1", "0.0.0.0", "::", "192.168.1.5", "Box.lan")
)


@SETTINGS
@given(hosts, st.integers(1, 65535), st.sampled_from(("box", "Other")))
def test_the_bound_host_and_port_are_answered_and_no_other_port(
    host: str, port: int, hostname: str
) -> None:
    allowed = allowed_hosts(host, port, hostname)

    named = f"[{host}]" if ":" in host else host
    assert f"{named.lower()}:{port}" in allowed
    assert all(entry.endswith(f":{port}") and entry == entry.lower() for entry in allowed)
    if host not in ("0.0.0.0", "::"):
        assert f"{hostname.lower()}:{port}" not in allowed
