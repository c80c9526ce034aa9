"""The egress proxy with real bubblewrap, on loopback only: a sandboxed agent reaches a listed
port of the host's loopback through the proxy and nothing else; every refusal is a line of
network.log; a flood of connections does not hang it, and it ends with its session."""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from runner_core.backends.egress import NETWORK_LOG, egress_rules, parse_host_rule
from runner_shell.sandbox import SandboxStatus
from runner_shell.sandbox.bwrap import Confinement, bwrap_options
from runner_shell.sandbox.processes import ProcessResult, run_process
from runner_shell.sandbox.proxy import (
    BRIDGE_PATH,
    BRIDGE_SOURCE,
    MAX_CONNECTIONS,
    PROXY_PORT,
    PROXY_SOCKET,
    EgressProxy,
    bridged_argv,
)
from runner_shell.scratch.sandbox import runtime_paths
from tests.helpers.loopback_service import Service

PYTHON = os.path.realpath(sys.executable)
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "NO_PROXY": "127.0.0.1,localhost"}


@pytest.fixture
def model() -> Iterator[Service]:
    service = Service()
    yield service
    service.close()


@pytest.fixture
def temporal() -> Iterator[Service]:
    """Stands for the Temporal dev server's HTTP API on the host's loopback."""
    service = Service()
    yield service
    service.close()


@attrs.frozen
class Session:
    result: ProcessResult
    output: str
    refused: list[dict[str, Any]]


def run_proxied(
    status: SandboxStatus,
    root: Path,
    allow: tuple[str, ...],
    script: str,
    resolve: Callable[[str, int], tuple[str, ...]] | None = None,
) -> Session:
    """`script` as a sandboxed agent whose only way out is a proxy allowing `allow`."""
    work, home = root / "work", root / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    log = root / "agent.log"
    network_log = root / NETWORK_LOG
    # Nothing outside the system is there unless named: the interpreter is bound.
    confinement = status.confine(
        work, home, writable=(root,), read_only=runtime_paths([PYTHON]), network=False
    )
    assert confinement is not None
    rules = egress_rules("command", allow)
    with EgressProxy(rules, network_log, 60, resolve=resolve) as proxy:
        result = run_process(
            bridged_argv([PYTHON, "-c", textwrap.dedent(script)]),
            cwd=work,
            env=ENV,
            stdin_path=None,
            timeout_secs=30,
            log_path=log,
            limit_bytes=100_000,
            confinement=attrs.evolve(confinement, proxy_socket=proxy.socket_path),
        )
    refused = []
    if network_log.exists():
        refused = [json.loads(line) for line in network_log.read_text().splitlines()]
    return Session(result, log.read_text(errors="replace"), refused)


FETCH = """
import os, socket, urllib.request
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.read().decode()
    except Exception as error:
        return f"error {error}"
"""


def test_an_allowed_loopback_port_is_reached_only_through_the_proxy(
    usable_sandbox: SandboxStatus, tmp_path: Path, model: Service
) -> None:
    script = (
        FETCH
        + f"""
print("proxy", os.environ["HTTPS_PROXY"], os.environ["http_proxy"], "NO_PROXY" in os.environ)
print("via proxy:", fetch("http://127.0.0.1:{model.port}/v1/models"))
try:
    socket.create_connection(("127.0.0.1", {model.port}), timeout=2)
    print("direct: connected")
except OSError as error:
    print("direct:", type(error).__name__)
"""
    )
    session = run_proxied(usable_sandbox, tmp_path, (f"127.0.0.1:{model.port}",), script)

    assert session.result.exit_code == 0, session.output
    assert "proxy http://127.0.0.1:3128 http://127.0.0.1:3128 False" in session.output
    assert "via proxy: served /v1/models" in session.output
    assert "direct: ConnectionRefusedError" in session.output  # its loopback is its own
    assert model.paths == ["/v1/models"]
    assert session.refused == []


def test_another_loopback_port_is_refused_and_logged(
    usable_sandbox: SandboxStatus, tmp_path: Path, model: Service, temporal: Service
) -> None:
    script = (
        FETCH
        + f"""
print("temporal:", fetch("http://127.0.0.1:{temporal.port}/api/v1/namespaces"))
print("localhost:", fetch("http://localhost:{temporal.port}/api/v1/namespaces"))
"""
    )
    session = run_proxied(usable_sandbox, tmp_path, (f"127.0.0.1:{model.port}",), script)

    assert "temporal: error HTTP Error 403: Forbidden" in session.output, session.output
    assert "localhost: error HTTP Error 403: Forbidden" in session.output
    assert temporal.paths == []
    assert [(line["host"], line["port"], line["reason"]) for line in session.refused] == [
        ("127.0.0.1", temporal.port, "not in the allow-list"),
        ("localhost", temporal.port, "not in the allow-list"),
    ]
    assert all(line["at"].endswith("Z") for line in session.refused)


def test_a_listed_name_that_resolves_to_loopback_is_refused(
    usable_sandbox: SandboxStatus, tmp_path: Path, temporal: Service
) -> None:
    """DNS rebinding: a name on the list that answers with the host's own address."""
    script = FETCH + f'print("rebound:", fetch("http://models.example:{temporal.port}/x"))'

    session = run_proxied(
        usable_sandbox,
        tmp_path,
        (f"models.example:{temporal.port}",),
        script,
        resolve=lambda host, port: ("127.0.0.1",),
    )

    assert "rebound: error HTTP Error 403" in session.output, session.output
    assert temporal.paths == []
    assert session.refused[0]["host"] == "models.example"
    assert "127.0.0.1, a host-internal address that is not listed" in session.refused[0]["reason"]


def test_an_https_tunnel_carries_bytes_both_ways_to_a_listed_port(
    usable_sandbox: SandboxStatus, tmp_path: Path
) -> None:
    echo = socket.create_server(("127.0.0.1", 0))
    port = echo.getsockname()[1]

    def serve() -> None:
        conn, _ = echo.accept()
        with conn:
            conn.sendall(conn.recv(1024).upper())

    threading.Thread(target=serve, daemon=True).start()
    script = f"""
import socket
with socket.create_connection(("127.0.0.1", 3128), timeout=10) as proxy:
    proxy.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    print(proxy.recv(1024).split(b"\\r\\n")[0].decode())
    proxy.sendall(b"client hello")
    print(proxy.recv(1024).decode())
with socket.create_connection(("127.0.0.1", 3128), timeout=10) as proxy:
    proxy.sendall(b"CONNECT 127.0.0.1:1 HTTP/1.1\\r\\n\\r\\n")
    print(proxy.recv(1024).split(b"\\r\\n")[0].decode())
"""
    try:
        session = run_proxied(usable_sandbox, tmp_path, (f"127.0.0.1:{port}",), script)
    finally:
        echo.close()

    assert "HTTP/1.1 200 Connection Established\nCLIENT HELLO\nHTTP/1.1 403 Forbidden\n" in (
        session.output
    ), session.output
    assert [(line["port"], line["reason"]) for line in session.refused] == [
        (1, "not in the allow-list")
    ]


def test_without_the_bridge_nothing_leaves_the_sandbox(
    usable_sandbox: SandboxStatus, tmp_path: Path, model: Service
) -> None:
    """No way out but the proxy: not the host's loopback, not its abstract Unix sockets, not a
    name (no resolver is reachable), and the proxy socket itself only speaks the allow-list."""
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0runner-egress-test-{os.getpid()}-{time.monotonic_ns()}"
    abstract.bind(name)
    abstract.listen()
    script = f"""
import socket
for family, address in (
    (socket.AF_INET, ("127.0.0.1", {model.port})),
    (socket.AF_UNIX, {name!r}),
):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        print("reached", family)
    except OSError as error:
        print("refused", type(error).__name__)
try:
    socket.getaddrinfo("example.com", 443)
    print("resolved")
except OSError as error:
    print("no name", type(error).__name__)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({PROXY_SOCKET!r})
s.sendall(b"GET http://127.0.0.1:{model.port}/raw HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
print(s.recv(100).split(b"\\r\\n")[0].decode())
"""
    try:
        session = run_proxied(usable_sandbox, tmp_path, (), script)
    finally:
        abstract.close()

    assert "reached" not in session.output, session.output
    assert session.output.count("refused ConnectionRefusedError") == 2, session.output
    assert "no name gaierror" in session.output
    assert "HTTP/1.1 403 Forbidden" in session.output
    assert model.paths == []


def test_many_connections_at_once_neither_hang_the_proxy_nor_outlive_it(
    tmp_path: Path, model: Service
) -> None:
    rules = (parse_host_rule(f"127.0.0.1:{model.port}"),)
    silent: list[socket.socket] = []
    threads_before = threading.active_count()
    with EgressProxy(rules, tmp_path / NETWORK_LOG, 60) as proxy:
        # Clients that connect and say nothing hold their slots...
        for _ in range(MAX_CONNECTIONS + 20):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(proxy.socket_path))
            silent.append(client)
        time.sleep(0.5)
        # ...and the ones past the cap are turned away at once, not queued.
        answers = []
        for client in silent[-5:]:
            client.settimeout(5)
            answers.append(client.recv(100).split(b"\r\n")[0])
        started = time.monotonic()
    closing_secs = time.monotonic() - started

    assert answers == [b"HTTP/1.1 503 Service Unavailable"] * 5
    assert closing_secs < 2.0
    assert not proxy.running
    assert not proxy.socket_path.exists()
    silent[0].settimeout(5)
    assert silent[0].recv(100) == b""  # the proxy closed what it held
    for client in silent:
        client.close()
    reasons = {json.loads(line)["reason"] for line in (tmp_path / NETWORK_LOG).open()}
    assert reasons == {"too many connections at once"}
    deadline = time.monotonic() + 5
    while threading.active_count() > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads_before  # every connection's thread ended


def test_the_proxy_ends_with_its_lifetime_even_if_nobody_closes_it(
    tmp_path: Path, model: Service
) -> None:
    proxy = EgressProxy((), tmp_path / NETWORK_LOG, lifetime_secs=0.5).__enter__()
    try:
        tunnel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tunnel.connect(str(proxy.socket_path))
        deadline = time.monotonic() + 5
        while proxy.running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not proxy.running
        tunnel.settimeout(5)
        assert tunnel.recv(100) == b""
        tunnel.close()
    finally:
        proxy.close()
    assert not proxy.socket_path.parent.exists()


def test_a_forwarded_request_keeps_no_connection_for_a_second_host(
    tmp_path: Path, model: Service, temporal: Service
) -> None:
    """After one forwarded http:// request the connection closes: a second request on it,
    for another host, never reaches that host unchecked."""
    rules = (parse_host_rule(f"127.0.0.1:{model.port}"),)
    with EgressProxy(rules, tmp_path / NETWORK_LOG, 60) as proxy:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(proxy.socket_path))
        client.settimeout(5)
        client.sendall(
            f"GET http://127.0.0.1:{model.port}/one HTTP/1.1\r\nHost: a\r\n"
            "Connection: keep-alive\r\nProxy-Connection: keep-alive\r\n\r\n"
            f"GET http://127.0.0.1:{temporal.port}/two HTTP/1.1\r\nHost: b\r\n\r\n".encode()
        )
        received = b""
        while chunk := client.recv(4096):
            received += chunk
        client.close()

    head = received.split(b"\r\n\r\n")[0].lower()
    assert b"connection: close" in head
    assert received.endswith(b"served /one")
    assert temporal.paths == []


def test_a_guard_without_the_network_has_no_way_out_not_even_the_proxy(
    usable_sandbox: SandboxStatus, tmp_path: Path, model: Service
) -> None:
    """`[guard] network = false`: no route, no proxy socket, no host's abstract socket, even
    while an agent's proxy allowing the port runs (as root too: nothing of the host's network
    is in the guard's namespace to enter)."""
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0runner-guard-test-{os.getpid()}-{time.monotonic_ns()}"
    abstract.bind(name)
    abstract.listen()
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    guard = usable_sandbox.confine(work, home, read_only=runtime_paths([PYTHON]), network=False)
    assert guard is not None and guard.proxy_socket is None
    script = f"""
import os, socket
print("proxy socket:", os.path.exists({PROXY_SOCKET!r}), "HTTPS_PROXY" in os.environ)
for family, address in (
    (socket.AF_INET, ("127.0.0.1", {model.port})),
    (socket.AF_INET, ("127.0.0.1", 3128)),
    (socket.AF_UNIX, {name!r}),
):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        print("reached", address)
    except OSError as error:
        print("refused", type(error).__name__)
print("interfaces:", sorted(name for _, name in socket.if_nameindex()))
"""
    rules = (parse_host_rule(f"127.0.0.1:{model.port}"),)
    log = tmp_path / "guard.log"
    try:
        with EgressProxy(rules, tmp_path / NETWORK_LOG, 60):
            result = run_process(
                [PYTHON, "-c", textwrap.dedent(script)],
                cwd=work,
                env=ENV,
                stdin_path=None,
                timeout_secs=30,
                log_path=log,
                limit_bytes=100_000,
                confinement=guard,
            )
    finally:
        abstract.close()
    output = log.read_text()

    assert result.exit_code == 0, output
    assert "proxy socket: False False" in output
    assert "reached" not in output and output.count("refused ConnectionRefusedError") == 3
    assert "interfaces: ['lo']" in output
    assert model.paths == []


def test_a_fifo_planted_as_network_log_neither_blocks_nor_hangs_the_proxy(
    tmp_path: Path,
) -> None:
    log = tmp_path / NETWORK_LOG
    os.mkfifo(log)
    with EgressProxy((), log, 60) as proxy:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(proxy.socket_path))
        client.settimeout(5)
        client.sendall(b"CONNECT 127.0.0.1:7233 HTTP/1.1\r\n\r\n")
        answer = client.recv(100)
        client.close()
        started = time.monotonic()

    assert answer.startswith(b"HTTP/1.1 403 Forbidden")
    assert time.monotonic() - started < 2.0
    assert not proxy.running


def test_the_proxy_socket_and_bridge_are_bound_after_every_mount_and_proxy_env_set_last(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    proxied = Confinement(
        bwrap="bwrap", work_dir=work, home=tmp_path / "home", proxy_socket=tmp_path / "p.sock"
    )

    options = bwrap_options(proxied, {"NO_PROXY": "127.0.0.1", "HTTPS_PROXY": "http://elsewhere"})

    mounts = [i for i, option in enumerate(options) if option in ("--bind", "--ro-bind", "--tmpfs")]
    socket_bind = options.index(str(tmp_path / "p.sock"))
    assert options[socket_bind - 1 : socket_bind + 2] == (
        "--bind",
        str(tmp_path / "p.sock"),
        PROXY_SOCKET,
    )
    assert socket_bind - 1 == mounts[-2]  # only the bridge's read-only bind comes after
    assert options[mounts[-1] : mounts[-1] + 3] == ("--ro-bind", str(BRIDGE_SOURCE), BRIDGE_PATH)
    assert "--unshare-net" in options
    tail = options[socket_bind:]
    assert tail[tail.index("--unsetenv") :][:2] == ("--unsetenv", "NO_PROXY")
    last_https = max(i for i, option in enumerate(options) if option == "HTTPS_PROXY")
    assert options[last_https + 1] == f"http://127.0.0.1:{PROXY_PORT}"
    assert bwrap_options(attrs.evolve(proxied, proxy_socket=None), {})[-1] != BRIDGE_PATH


def test_a_proxied_confinement_cannot_also_have_the_network(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no network of its own"):
        Confinement(
            bwrap="bwrap",
            work_dir=tmp_path,
            home=tmp_path,
            network=True,
            proxy_socket=tmp_path / "p.sock",
        )


def test_closing_the_proxy_ends_its_accepting_thread_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's end does not wait out the accept poll (it did at every agent run): the
    listener is shut down, which wakes the thread blocked in accept()."""
    from runner_shell.sandbox import proxy as proxy_module

    monkeypatch.setattr(proxy_module, "_POLL_SECS", 3600.0)  # accept() would block an hour
    proxy = EgressProxy((), tmp_path / NETWORK_LOG, 7200)
    proxy.__enter__()
    monkeypatch.setattr(proxy_module, "_POLL_SECS", 0.0)  # close() does not wait for it
    proxy.close()
    proxy._thread.join(timeout=30)
    assert not proxy.running
