"""Which requests `runner serve` answers: only those whose `Host` header names the address it
is bound to, only GET and HEAD, and every answer with the security headers.

This is HTTP policy, and this module is its one home: the rule against DNS rebinding (a page of
another site whose name resolves to this machine must get no answer) is about a socket's
address and this machine's name, never about a run, so it lives in the web room rather than
the core. `allowed_hosts` and `is_loopback` decide, purely, so every case is tested directly;
HostGuard enforces their answer on every request (421 for any other Host, 405 for a write).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

# On every answer: no MIME sniffing, nothing loaded from another origin, nothing cached.
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'",
    "Cache-Control": "no-store",
}

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


class HostGuard:
    """Answers 421 to a request whose Host header is not the bound host (DNS rebinding), 405
    to anything but GET and HEAD, and adds the security headers to every answer."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.hosts:
            await _plain(421, f"unknown Host header {host!r}")(scope, receive, send)
        elif scope["method"] not in ("GET", "HEAD"):
            await _plain(405, "read-only: only GET and HEAD")(scope, receive, send)
        else:
            await self.app(scope, receive, _with_headers(send))


def _plain(status: int, text: str) -> Response:
    return PlainTextResponse(f"runner serve: {text}\n", status_code=status, headers=HEADERS)


def _with_headers(send: Send) -> Send:
    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            extra = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
