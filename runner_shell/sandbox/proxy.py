"""The egress proxy of one agent session: the only way out of its network namespace.

The agent runs with `--unshare-net` (only a loopback of its own). `EgressProxy` listens on a
Unix socket in a private directory, which bubblewrap binds into the sandbox at PROXY_SOCKET;
the sandbox's first process, runner_shell.sandbox.bridge, forwards 127.0.0.1:PROXY_PORT inside
to it, and HTTPS_PROXY/HTTP_PROXY/ALL_PROXY name that port. The proxy speaks HTTP CONNECT
(tunnels, for https://) and absolute-URI requests (for http:// endpoints), resolves each name
itself and connects only where runner_core.backends.egress allows; every refusal is one JSON
line in the iteration's network.log. It runs as threads of the runner for the session's block
and no longer than its lifetime; closing it ends every connection, and no thread of it ever
keeps the runner waiting (they are daemons, each blocking call has a deadline).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from runner_core.backends.egress import (
    HostRule,
    egress_decision,
    listed,
    normal_host,
    refusal_line,
)
from runner_shell.store.iteration_log import utc_now

# Where the proxy's socket and the bridge are inside the sandbox, and the port the bridge
# listens on there: the sandbox's loopback is its own, so a fixed port never collides.
PROXY_SOCKET = "/tmp/.runner-egress/proxy.sock"
BRIDGE_PATH = "/tmp/.runner-egress/bridge.py"
PROXY_PORT = 3128
BRIDGE_SOURCE = Path(__file__).with_name("bridge.py")
# A request head is a few hundred bytes; a client that sends more, or takes longer, is refused.
_HEAD_MAX_BYTES = 64 * 1024
_HEAD_TIMEOUT_SECS = 15.0
_CONNECT_TIMEOUT_SECS = 10.0
# A stalled peer never holds a relay thread past this per send.
_SEND_TIMEOUT_SECS = 60.0
_POLL_SECS = 0.25
_CHUNK_BYTES = 64 * 1024
# Connections open at once; past it a new one is refused (a flood must not exhaust threads).
MAX_CONNECTIONS = 128
# network.log lines per session: a refusal flood must not fill the disk.
MAX_LOGGED = 1000
# The proxy outlives the agent's deadline by this much at most, whatever its caller does.
LIFETIME_GRACE_SECS = 30.0
_HOP_HEADERS = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"te"}
)


def proxy_env() -> dict[str, str]:
    """The variables that send every HTTP client in the sandbox to the bridge: upper and lower
    case, as tools differ. NO_PROXY is left unset, so even a model on loopback goes through."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
    return {spelling: url for name in names for spelling in (name, name.lower())}


def bridged_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """`argv` started by the bridge inside the sandbox (the real interpreter, not a venv's
    link to it: /usr is always bound; -I -S: no site, no user's packages, no PYTHON*)."""
    python = os.path.realpath(sys.executable)
    return (python, "-I", "-S", "-B", BRIDGE_PATH, PROXY_SOCKET, str(PROXY_PORT), "--", *argv)


class EgressProxy:
    """One session's proxy; `with EgressProxy(...) as proxy:` runs it, `proxy.socket_path` is
    what the sandbox binds at PROXY_SOCKET."""

    def __init__(
        self,
        rules: Sequence[HostRule],
        log_path: Path,
        lifetime_secs: float,
        clock: Callable[[], str] = utc_now,
        resolve: Callable[[str, int], tuple[str, ...]] | None = None,
    ) -> None:
        self.rules = tuple(rules)
        self.log_path = log_path
        self._clock = clock
        self._resolve = resolve or _resolve
        self._deadline = time.monotonic() + lifetime_secs
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._logged = 0
        self._directory = Path(tempfile.mkdtemp(prefix="runner-egress-"))
        self.socket_path = self._directory / "proxy.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._thread = threading.Thread(target=self._accept, name="egress-proxy", daemon=True)

    def __enter__(self) -> EgressProxy:
        try:
            self._listener.bind(str(self.socket_path))
            # The directory (0700) keeps other users out; the socket itself must accept the
            # sandbox's user, whatever uid the user namespace maps it to.
            os.chmod(self.socket_path, 0o666)
            self._listener.listen(MAX_CONNECTIONS)
            self._listener.settimeout(_POLL_SECS)
        except OSError:
            self.close()
            raise
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the proxy and every connection through it; idempotent, never blocks for long."""
        self._stop.set()
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        # A listener closed under a thread blocked in accept() does not wake it; shut down,
        # accept() fails at once and the thread ends without waiting out its poll.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * _POLL_SECS)
        shutil.rmtree(self._directory, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _ended(self) -> bool:
        return self._stop.is_set() or time.monotonic() > self._deadline

    def _accept(self) -> None:
        while not self._ended():
            try:
                client, _address = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            with self._lock:
                crowded = len(self._open) >= MAX_CONNECTIONS
                if not crowded:
                    self._open.add(client)
            if crowded:
                self._refuse(client, 503, "", 0, "too many connections at once")
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()
        self._stop.set()
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = self._open_upstream(client)
        finally:
            if upstream is None:
                self._forget(client)

    def _open_upstream(self, client: socket.socket) -> socket.socket | None:
        client.settimeout(_HEAD_TIMEOUT_SECS)
        try:
            head, rest = _read_head(client)
        except (OSError, ValueError) as error:
            if self._ended():  # the proxy closed it: the session is over, nothing was refused
                return None
            reason = "no request head in time" if isinstance(error, TimeoutError) else str(error)
            self._refuse(client, 400, "", 0, f"bad request: {reason}")
            return None
        try:
            request = _parse_request(head)
        except ValueError as error:
            self._refuse(client, 400, "", 0, f"bad request: {error}")
            return None
        host, port = request.host, request.port
        if not listed(host, port, self.rules):
            self._refuse(client, 403, host, port, "not in the allow-list")
            return None
        decision = egress_decision(host, port, self._resolve(host, port), self.rules)
        if not decision.allowed:
            self._refuse(client, 403, host, port, decision.reason)
            return None
        upstream, problem = _connect(decision.addresses, port)
        if upstream is None:
            self._refuse(client, 502, host, port, f"could not connect: {problem}")
            return None
        with self._lock:
            self._open.add(upstream)
        try:
            if request.tunnel:
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                first = rest
            else:
                first = request.origin_head + rest
            upstream.settimeout(_SEND_TIMEOUT_SECS)
            client.settimeout(_SEND_TIMEOUT_SECS)
            if first:
                upstream.sendall(first)
            self._relay(client, upstream, rewrite_response=not request.tunnel)
        except OSError:
            pass
        finally:
            self._forget(upstream)
            self._forget(client)
        return upstream

    def _relay(
        self, client: socket.socket, upstream: socket.socket, *, rewrite_response: bool
    ) -> None:
        """Copy both ways until both ends are done or the proxy ends. A forwarded request's
        response is marked `Connection: close`: the next request opens a new connection, and
        the proxy checks it again."""
        peer = {client: upstream, upstream: client}
        reading = [client, upstream]
        response_head = b"" if rewrite_response else None
        while reading and not self._ended():
            ready, _, _ = select.select(reading, [], [], _POLL_SECS)
            for source in ready:
                data = source.recv(_CHUNK_BYTES)
                sink = peer[source]
                if not data:
                    reading.remove(source)
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_WR)
                    if source is upstream and response_head:
                        client.sendall(response_head)
                    continue
                if source is upstream and response_head is not None:
                    response_head += data
                    if b"\r\n\r\n" not in response_head and len(response_head) < _HEAD_MAX_BYTES:
                        continue
                    data, response_head = _closing_response(response_head), None
                sink.sendall(data)

    def _refuse(
        self, client: socket.socket, status: int, host: str, port: int, reason: str
    ) -> None:
        self._log(host, port, reason)
        words = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
        body = f"runner egress proxy: {host}:{port} refused: {reason}\n".encode()
        with contextlib.suppress(OSError):
            client.settimeout(_POLL_SECS * 4)
            client.sendall(
                f"HTTP/1.1 {status} {words.get(status, 'Service Unavailable')}\r\n"
                f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                "X-Proxy-Error: blocked-by-allowlist\r\nConnection: close\r\n\r\n".encode()
                + body
            )
        self._forget(client)

    def _log(self, host: str, port: int, reason: str) -> None:
        """Append one line to network.log, never through a symlink and never blocking: a FIFO
        or anything but a regular file planted there gets nothing, and no lock is held."""
        with self._lock:
            if self._logged >= MAX_LOGGED:
                return
            self._logged += 1
        line = refusal_line(host, port, reason, self._clock()) + "\n"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(self.log_path, flags | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.write(fd, line.encode("utf-8"))
        except OSError:
            pass
        finally:
            os.close(fd)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        with contextlib.suppress(OSError):
            sock.close()


class _Request:
    """What the proxy needs of a request head: where to, and (forwarded) its origin-form."""

    def __init__(self, host: str, port: int, tunnel: bool, origin_head: bytes) -> None:
        self.host = host
        self.port = port
        self.tunnel = tunnel
        self.origin_head = origin_head


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_MAX_BYTES:
            raise ValueError(f"request head over {_HEAD_MAX_BYTES} bytes")
        chunk = client.recv(_CHUNK_BYTES)
        if not chunk:
            raise ValueError("the connection closed before a request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _parse_request(head: bytes) -> _Request:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise ValueError("not an HTTP/1.x request line")
    method, target, version = (part.decode("latin-1") for part in parts)
    if method == "CONNECT":
        host, port = _authority(target, None)
        return _Request(host, port, True, b"")
    scheme, sep, remainder = target.partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError("only CONNECT and absolute http:// requests are proxied")
    authority, _, path = remainder.partition("/")
    host, port = _authority(authority.rpartition("@")[2], 80)
    headers = [
        line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    if not any(line.split(b":", 1)[0].strip().lower() == b"host" for line in headers):
        headers.insert(0, b"Host: " + authority.encode("latin-1"))
    request_line = f"{method} /{path} {version}".encode("latin-1")
    origin = b"\r\n".join((request_line, *headers, b"Connection: close")) + b"\r\n\r\n"
    return _Request(host, port, False, origin)


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    """`host:port` or `[v6]:port` (the port optional when there is a default)."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"bad authority {text!r}")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        if default_port is None:
            raise ValueError(f"CONNECT {text!r} names no port")
        return normal_host(host), default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port in {text!r}")
    if not host:
        raise ValueError(f"no host in {text!r}")
    return normal_host(host), int(port_text)


def _closing_response(head: bytes) -> bytes:
    """The upstream response's first bytes with its head saying `Connection: close`."""
    top, sep, rest = head.partition(b"\r\n\r\n")
    if not sep:
        return head
    lines = [
        line
        for line in top.split(b"\r\n")
        if line.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive")
    ]
    return b"\r\n".join((*lines, b"Connection: close")) + b"\r\n\r\n" + rest


def _resolve(host: str, port: int) -> tuple[str, ...]:
    """The addresses `host` resolves to here (an IP address is its own), none if it does not."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return ()
    return tuple(dict.fromkeys(str(info[4][0]) for info in found))


def _connect(addresses: Sequence[str], port: int) -> tuple[socket.socket | None, str]:
    """A connection to the first of `addresses` that answers, never to a name: what was
    checked is what is reached."""
    problem = "no address"
    for address in addresses:
        try:
            return socket.create_connection((address, port), _CONNECT_TIMEOUT_SECS), ""
        except OSError as error:
            problem = error.strerror or str(error)
    return None, problem


@contextlib.contextmanager
def egress_proxy(
    rules: Sequence[HostRule], log_path: Path, lifetime_secs: float
) -> Iterator[EgressProxy]:
    """A running proxy for one session of at most `lifetime_secs` (its deadline plus grace)."""
    with EgressProxy(rules, log_path, lifetime_secs + LIFETIME_GRACE_SECS) as proxy:
        yield proxy
