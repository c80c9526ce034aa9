"""Which `Host` headers `runner serve` answers, and which bind addresses are loopback.

This is HTTP policy, the one home of the rule against DNS rebinding: a page on another site
that resolves its own name to this machine's address must get no answer, so a request is
answered only when its `Host` header names the address the server was bound to.
runner_shell.web.serve's HostGuard enforces the set decided here (421 for any other Host) and
warns when a bind is not loopback. It lives in the web room, not the core, because it is about
a socket's address and this machine's name, never about a run; it stays pure (no socket, no
Starlette) so every case is tested directly.
"""

from __future__ import annotations

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::")


def is_loopback(host: str) -> bool:
    """Whether a bind address is reachable only from this machine."""
    return host in ("localhost", "::1") or host.startswith("127.")


def allowed_hosts(host: str, port: int, hostname: str) -> frozenset[str]:
    """The `Host` headers a server bound to `host:port` answers (any other: DNS rebinding).

    A loopback bind answers its loopback names; a wildcard bind also this machine's
    `hostname`; any other bind the name it was given. Lower case, always with the port.
    """
    names = {f"[{host}]" if ":" in host else host}
    if is_loopback(host) or host in WILDCARD_HOSTS:
        names.update(LOOPBACK_NAMES)
    if host in WILDCARD_HOSTS:
        names.add(hostname)
    return frozenset(f"{name.lower()}:{port}" for name in names)
