"""Which connections a sandboxed agent's egress proxy lets through (docs/sandbox.md).

An agent's only way out of its network namespace is the runner's proxy; this module decides,
for one request to `host:port` whose name the shell resolved to `addresses`, whether it goes
through and, if not, why. The allow-list is the backend's own hosts plus `[sandbox]
allow_hosts`: `host:port` or `*.domain:port` (any subdomain, not the domain itself). A listed
name that resolves to a loopback, link-local or unspecified address is refused unless that
address itself is listed, so a name cannot be rebound onto the host's own services. Never
resolves a name, opens a socket or reads a clock: the shell does and passes the results in.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from runner_core.backends.registry import BACKENDS
from runner_core.json_text import json_value

# What the iteration directory's refusal log is called; one JSON object a line.
NETWORK_LOG = "network.log"
_MAX_HOST_CHARS = 253
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class HostRuleError(ValueError):
    """A `host:port` entry that is not one; str() says what is wrong with it."""


@attrs.frozen(slots=True)
class HostRule:
    """One allow-list entry: a name (lowercase), `*.domain`, or an IP address; and a port."""

    host: str
    port: int

    @property
    def text(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def matches(self, host: str, port: int) -> bool:
        """Whether a request for `host` (normalised, see `normal_host`) and `port` is listed."""
        if port != self.port:
            return False
        if self.host.startswith("*."):
            return _ip(host) is None and host.endswith(self.host[1:])
        return host == self.host


@attrs.frozen(slots=True)
class EgressDecision:
    """Whether one request goes through: the addresses to connect to, else why not."""

    allowed: bool
    reason: str  # "allowed", or the refusal in a few words
    addresses: tuple[str, ...] = ()


def parse_host_rule(text: str) -> HostRule:
    """`host:port`, `*.domain:port` or `[v6 address]:port` as a rule; HostRuleError if not."""
    if not isinstance(text, str) or not text:
        raise HostRuleError(f"{text!r} is not host:port")
    host_text, colon, port_text = text.rpartition(":")
    if not colon or not host_text:
        raise HostRuleError(f"{text!r} is not host:port (e.g. api.openai.com:443)")
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise HostRuleError(f"{text!r}: the port must be a number from 1 to 65535")
    bracketed = host_text.startswith("[") and host_text.endswith("]")
    host = normal_host(host_text)
    if bracketed or ":" in host:
        address = _ip(host_text.removeprefix("[").removesuffix("]").lower())
        if address is None or address.version != 6:
            raise HostRuleError(f"{text!r}: {host_text} is not an IPv6 address")
        if not bracketed:
            raise HostRuleError(f"{text!r}: write an IPv6 address in brackets, [{host}]:port")
        return HostRule(host, int(port_text))
    if _ip(host) is not None:
        return HostRule(host, int(port_text))
    name = host.removeprefix("*.")
    labels = name.split(".")
    if (
        len(host) > _MAX_HOST_CHARS
        or "*" in name
        or not all(label and _is_label(label) for label in labels)
        or (host.startswith("*.") and len(labels) < 2)
    ):
        raise HostRuleError(f"{text!r}: {host_text} is not a host name, *.domain or IP address")
    return HostRule(host, int(port_text))


def normal_host(host: str) -> str:
    """A host as requests and rules are compared: lowercase, no brackets, no trailing dot,
    an IP address in its canonical spelling (an IPv4-mapped IPv6 address as the IPv4 one)."""
    text = host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")
    address = _ip(text)
    if address is None:
        return text
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def egress_rules(backend: str, allow_hosts: Iterable[str]) -> tuple[HostRule, ...]:
    """The allow-list of a `backend` session: its own hosts and `[sandbox] allow_hosts`,
    sorted and without repeats (both already checked: config parsing refuses a bad entry)."""
    info = BACKENDS.get(backend)
    texts = (*(info.hosts if info is not None else ()), *allow_hosts)
    rules = {parse_host_rule(text) for text in texts}
    return tuple(sorted(rules, key=lambda rule: (rule.host, rule.port)))


def network_layer(sandboxed: bool, backend: str, allow_hosts: Iterable[str]) -> str:
    """What holds the agent's network, as `runner validate` and `status` say it: `proxy(N
    hosts)` (the egress proxy and its allow-list) when sandboxed, else `host` (the agent has
    the host's network: no sandbox, no namespace to confine it in)."""
    if not sandboxed:
        return "host"
    count = len(egress_rules(backend, allow_hosts))
    return f"proxy({count} host{'' if count == 1 else 's'})"


def listed(host: str, port: int, rules: Sequence[HostRule]) -> bool:
    """Whether `host:port` is on the allow-list at all (before its name is resolved)."""
    return any(rule.matches(normal_host(host), port) for rule in rules)


def egress_decision(
    host: str, port: int, addresses: Sequence[str], rules: Sequence[HostRule]
) -> EgressDecision:
    """Whether a request for `host:port` goes through, given the `addresses` its name resolved
    to (an IP literal resolves to itself; none: it did not resolve)."""
    name = normal_host(host)
    if not listed(name, port, rules):
        return EgressDecision(False, "not in the allow-list")
    if not addresses:
        return EgressDecision(False, "the name does not resolve")
    connect: list[str] = []
    for text in addresses:
        address = normal_host(text)
        parsed = _ip(address)
        if parsed is None:
            return EgressDecision(False, f"resolved to {text!r}, not an address")
        if _internal(parsed) and not any(rule.matches(address, port) for rule in rules):
            return EgressDecision(
                False, f"resolves to {address}, a host-internal address that is not listed"
            )
        if address not in connect:
            connect.append(address)
    return EgressDecision(True, "allowed", tuple(connect))


def refusal_line(host: str, port: int, reason: str, at: str) -> str:
    """One line of network.log: a refused connection, `at` the time the shell read."""
    return json.dumps(
        {"at": at, "host": host, "port": port, "reason": reason},
        sort_keys=True,
        ensure_ascii=False,
    )


@attrs.frozen(slots=True)
class Refusal:
    """A refused connection as network.log records it."""

    at: str
    host: str
    port: int
    reason: str


def refusals(text: str) -> tuple[Refusal, ...]:
    """The refusals network.log's `text` records, in its order; a line that is not one (cut
    short, or written by someone else) is skipped."""
    found = []
    for line in text.splitlines():
        try:
            value = json_value(line)
        except ValueError:
            continue
        if isinstance(value, Mapping) and _is_refusal(value):
            found.append(Refusal(value["at"], value["host"], value["port"], value["reason"]))
    return tuple(found)


def _is_refusal(value: Mapping[str, Any]) -> bool:
    return (
        all(isinstance(value.get(key), str) for key in ("at", "host", "reason"))
        and isinstance(value.get("port"), int)
        and not isinstance(value.get("port"), bool)
    )


def _internal(address: IPAddress) -> bool:
    """An address that reaches the host itself or its link: loopback, link-local, 0.0.0.0."""
    return address.is_loopback or address.is_link_local or address.is_unspecified


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_label(label: str) -> bool:
    return (
        len(label) <= 63
        and label.isascii()
        and label[0] != "-"
        and label[-1] != "-"
        and all(char.isalnum() or char in "-_" for char in label)
    )
