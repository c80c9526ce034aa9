"""The `proxy` group of bench.py: what the egress proxy costs one request of a sandboxed agent.

Runner: an HTTP GET to a server on loopback through the session's egress proxy (its Unix
socket, an absolute-URI request, which the proxy checks against the allow-list, connects and
relays), one connection per request, as the proxy closes each after its response. Floor: the
same GET straight to the server, a new TCP connection each. The bridge inside the sandbox
adds one more loopback hop, which this leaves out (it needs the sandbox's own loopback).
"""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import bench

from runner_core.backends.egress import parse_host_rule
from runner_shell.sandbox.proxy import EgressProxy

# Requests per timed run: a round trip is a fraction of a millisecond.
REQUESTS = 200
_BODY = b"x" * 512


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(_BODY)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(_BODY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _get(connect: Callable[[], socket.socket], target: str) -> None:
    with connect() as client:
        client.sendall(f"GET {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        while client.recv(65536):
            pass


def bench_proxy_round_trip(
    requests: int, repeat: int, log: Callable[[str], None]
) -> list[bench.Row]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    port = int(server.server_address[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rules = (parse_host_rule(f"127.0.0.1:{port}"),)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="runner-bench-proxy-") as scratch,
            EgressProxy(rules, Path(scratch) / "network.log", 3600) as proxy,
        ):
            path = str(proxy.socket_path)

            def through_proxy() -> socket.socket:
                client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                client.connect(path)
                return client

            def direct() -> socket.socket:
                return socket.create_connection(("127.0.0.1", port))

            def proxied_requests() -> None:
                for _ in range(requests):
                    _get(through_proxy, f"http://127.0.0.1:{port}/v1/responses")

            def direct_requests() -> None:
                for _ in range(requests):
                    _get(direct, "/v1/responses")

            ours, floor = bench.paired_times(proxied_requests, direct_requests, repeat)
    finally:
        server.shutdown()
        server.server_close()
    per_request = ((ours[0] / requests), tuple(run / requests for run in ours[1]))
    floor_per_request = ((floor[0] / requests), tuple(run / requests for run in floor[1]))
    log(
        f"proxy round trip: {per_request[0] * 1e3:.3f} ms vs direct "
        f"{floor_per_request[0] * 1e3:.3f} ms"
    )
    return [
        bench.ratio_row(
            "proxy round trip (one HTTP request through the egress proxy) vs direct on loopback",
            requests,
            per_request,
            floor_per_request,
            None,
            note="per request, a new connection each; the sandbox's bridge hop not included",
        )
    ]
