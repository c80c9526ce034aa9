"""The egress allow-list: which `host:port` a sandboxed agent's proxy lets through, given what
the name resolved to, and the rules' spelling in `[sandbox] allow_hosts`."""

from __future__ import annotations

import json

import attrs
import pytest

from runner_core.backends.egress import (
    HostRule,
    HostRuleError,
    egress_decision,
    egress_rules,
    network_layer,
    parse_host_rule,
    refusal_line,
    refusals,
)
from runner_core.backends.registry import BACKENDS
from runner_core.run.config import ConfigError, parse_config


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("api.openai.com:443", HostRule("api.openai.com", 443)),
        ("API.OpenAI.com.:443", HostRule("api.openai.com", 443)),
        ("*.Example.com:8443", HostRule("*.example.com", 8443)),
        ("127.0.0.1:8080", HostRule("127.0.0.1", 8080)),
        ("[::1]:9", HostRule("::1", 9)),
        ("[::ffff:127.0.0.1]:9", HostRule("127.0.0.1", 9)),
        ("model_server:1", HostRule("model_server", 1)),
    ],
)
def test_a_rule_is_read_in_its_canonical_spelling(text: str, rule: HostRule) -> None:
    assert parse_host_rule(text) == rule


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("api.openai.com", "is not host:port"),
        (":443", "is not host:port"),
        ("host:0", "the port must be a number from 1 to 65535"),
        ("host:65536", "the port must be a number from 1 to 65535"),
        ("host:https", "the port must be a number from 1 to 65535"),
        ("::1:80", "write an IPv6 address in brackets"),
        ("[1.2.3.4]:80", "is not an IPv6 address"),
        ("*:80", "is not a host name"),
        ("*.com.*:80", "is not a host name"),
        ("a b:80", "is not a host name"),
        ("-a.com:80", "is not a host name"),
        ("*.com:80", "is not a host name"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(HostRuleError, match=problem):
        parse_host_rule(text)


RULES = (
    HostRule("api.example.com", 443),
    HostRule("*.cdn.example.com", 443),
    HostRule("127.0.0.1", 8080),
    HostRule("localhost", 9000),
    HostRule("rebound.example.com", 443),
)
PUBLIC = ("93.184.216.34",)


@pytest.mark.parametrize(
    ("host", "port", "addresses", "allowed", "reason"),
    [
        ("api.example.com", 443, PUBLIC, True, "allowed"),
        ("API.example.com.", 443, PUBLIC, True, "allowed"),
        ("api.example.com", 80, PUBLIC, False, "not in the allow-list"),
        ("other.example.com", 443, PUBLIC, False, "not in the allow-list"),
        ("a.cdn.example.com", 443, PUBLIC, True, "allowed"),
        ("a.b.cdn.example.com", 443, PUBLIC, True, "allowed"),
        ("cdn.example.com", 443, PUBLIC, False, "not in the allow-list"),
        ("evilcdn.example.com", 443, PUBLIC, False, "not in the allow-list"),
        ("127.0.0.1", 8080, ("127.0.0.1",), True, "allowed"),
        ("127.0.0.1", 7233, ("127.0.0.1",), False, "not in the allow-list"),
        ("::ffff:127.0.0.1", 8080, ("::ffff:127.0.0.1",), True, "allowed"),
        # The name is listed, its loopback address is not: a rebinding or a surprise.
        ("localhost", 9000, ("127.0.0.1",), False, "127.0.0.1, a host-internal address"),
        ("rebound.example.com", 443, ("127.0.0.1",), False, "host-internal"),
        ("rebound.example.com", 443, ("169.254.169.254",), False, "host-internal"),
        ("rebound.example.com", 443, ("0.0.0.0",), False, "host-internal"),
        ("rebound.example.com", 443, ("::1",), False, "host-internal"),
        ("rebound.example.com", 443, ("fe80::1",), False, "host-internal"),
        ("rebound.example.com", 443, ("::ffff:127.0.0.2",), False, "host-internal"),
        ("rebound.example.com", 443, (*PUBLIC, "127.0.0.1"), False, "host-internal"),
        ("api.example.com", 443, (), False, "the name does not resolve"),
    ],
)
def test_the_allow_list_decides_each_request(
    host: str, port: int, addresses: tuple[str, ...], allowed: bool, reason: str
) -> None:
    decision = egress_decision(host, port, addresses, RULES)

    assert decision.allowed is allowed, decision
    assert reason in decision.reason
    assert bool(decision.addresses) is allowed


def test_an_allowed_request_connects_to_the_checked_addresses_only() -> None:
    decision = egress_decision("api.example.com", 443, ("93.184.216.34", "2606::1"), RULES)

    assert decision.addresses == ("93.184.216.34", "2606::1")


def test_the_loopback_address_listed_allows_a_name_resolving_to_it() -> None:
    rules = (HostRule("localhost", 9000), HostRule("127.0.0.1", 9000))

    assert egress_decision("localhost", 9000, ("127.0.0.1",), rules).addresses == ("127.0.0.1",)


def test_each_backend_reaches_only_its_own_hosts() -> None:
    assert BACKENDS["command"].hosts == ()
    assert "api.openai.com:443" in BACKENDS["codex"].hosts
    assert "auth.openai.com:443" in BACKENDS["codex"].hosts  # a ChatGPT login's refresh
    assert "api.anthropic.com:443" in BACKENDS["claude"].hosts
    for info in BACKENDS.values():
        for text in info.hosts:
            assert parse_host_rule(text).text == text


def test_a_session_gets_its_backends_hosts_and_the_configured_ones() -> None:
    rules = egress_rules("claude", ("127.0.0.1:8080", "api.anthropic.com:443"))

    assert [rule.text for rule in rules] == [
        "127.0.0.1:8080",
        "api.anthropic.com:443",
        "platform.claude.com:443",
    ]
    assert egress_rules("command", ()) == ()


def test_allow_hosts_is_read_checked_sorted_and_without_repeats() -> None:
    config = parse_config(
        {"sandbox": {"allow_hosts": ["b.example:1", "127.0.0.1:80", "B.example:1"]}}
    )

    assert config.sandbox.allow_hosts == ("127.0.0.1:80", "b.example:1")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("127.0.0.1:80", 'must be an array of "host:port" strings'),
        ([80], 'must be an array of "host:port" strings'),
        (["localhost"], "'localhost' is not host:port"),
    ],
)
def test_a_bad_allow_hosts_names_the_key(value: object, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"sandbox": {"allow_hosts": value}})

    assert raised.value.key == "sandbox.allow_hosts"
    assert problem in raised.value.problem


def test_network_log_lines_are_read_back_skipping_what_is_not_one() -> None:
    lines = [
        refusal_line("127.0.0.1", 7233, "not in the allow-list", "2026-01-01T00:00:00.000Z"),
        '{"host": "cut',
        "[" * 5_000 + "]" * 5_000,  # nested past the decoder's depth
        json.dumps({"at": "x", "host": "h", "port": True, "reason": "r"}),
        refusal_line("evil.example", 443, "not in the allow-list", "2026-01-01T00:00:01.000Z"),
    ]

    found = refusals("\n".join(lines) + "\n")

    assert [(r.host, r.port) for r in found] == [("127.0.0.1", 7233), ("evil.example", 443)]
    assert json.loads(lines[0]) == attrs.asdict(found[0])


@pytest.mark.parametrize(
    ("sandboxed", "backend", "allow_hosts", "layer"),
    [
        (True, "codex", (), "proxy(3 hosts)"),
        (True, "claude", ("127.0.0.1:8080",), "proxy(3 hosts)"),
        (True, "command", ("127.0.0.1:8080",), "proxy(1 host)"),
        (True, "command", (), "proxy(0 hosts)"),
        (False, "codex", (), "host"),
    ],
)
def test_validate_and_status_say_what_holds_the_agents_network(
    sandboxed: bool, backend: str, allow_hosts: tuple[str, ...], layer: str
) -> None:
    assert network_layer(sandboxed, backend, allow_hosts) == layer
