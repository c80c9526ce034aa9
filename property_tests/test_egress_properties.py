"""Properties of the egress allow-list (runner_core.backends.egress)."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.egress import (
    HostRule,
    egress_decision,
    normal_host,
    parse_host_rule,
)

labels = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12).filter(
    lambda label: label[0] != "-" and label[-1] != "-"
)
names = st.lists(labels, min_size=2, max_size=4).map(".".join)
ports = st.integers(1, 65535)
v4 = st.ip_addresses(v=4).map(str)
v6 = st.ip_addresses(v=6).map(str)
addresses = st.one_of(v4, v6)
rules = st.lists(
    st.builds(HostRule, st.one_of(names, names.map(lambda name: f"*.{name}"), v4), ports),
    max_size=6,
)


def _internal(text: str) -> bool:
    address = ipaddress.ip_address(normal_host(text))
    return address.is_loopback or address.is_link_local or address.is_unspecified


internal = st.sampled_from(["127.0.0.1", "127.5.6.7", "::1", "169.254.169.254", "0.0.0.0"])


@given(st.data(), st.lists(st.one_of(addresses, internal), max_size=4), rules.filter(bool))
def test_nothing_is_let_through_to_an_internal_address_that_is_not_listed_itself(
    data: st.DataObject, resolved: list[str], allow: list[HostRule]
) -> None:
    """Whatever a listed name resolves to, an allowed request connects only to the addresses
    it resolved to, and to a loopback, link-local or unspecified one only when that address is
    on the list with the port."""
    rule = data.draw(st.sampled_from(allow))
    host = rule.host.replace("*", data.draw(labels))
    port = rule.port
    decision = egress_decision(host, port, resolved, allow)

    if decision.allowed:
        assert set(decision.addresses) <= {normal_host(text) for text in resolved}
        for address in decision.addresses:
            if _internal(address):
                assert HostRule(address, port) in allow


@given(st.one_of(names, v4), ports, st.lists(addresses, min_size=1, max_size=4), rules)
def test_a_request_is_let_through_only_for_a_listed_host_and_port(
    host: str, port: int, resolved: list[str], allow: list[HostRule]
) -> None:
    decision = egress_decision(host, port, resolved, allow)

    if decision.allowed:
        assert any(rule.matches(normal_host(host), port) for rule in allow)
    else:
        assert decision.addresses == ()


@given(st.one_of(names, names.map(lambda name: f"*.{name}"), v4, v6), ports)
def test_a_rule_reads_back_from_its_own_text(host: str, port: int) -> None:
    rule = parse_host_rule(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")

    assert parse_host_rule(rule.text) == rule
