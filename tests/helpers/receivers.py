"""Local receivers for `[notify]` tests, on loopback and free ports: a JSON/HTTP receiver (what
Apprise's `json://` posts to), an SMTP server (aiosmtpd), and receivers that hang or refuse."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller


@contextmanager
def json_receiver() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """An HTTP server keeping every JSON body POSTed to it; yields (port, bodies)."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            bodies.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], bodies
    finally:
        server.shutdown()
        server.server_close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope.content.decode("utf-8", errors="replace"))
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[tuple[int, list[str]]]:
    """An SMTP server on loopback keeping every message it is sent; yields (port, messages)."""
    mailbox = _Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, mailbox.messages
    finally:
        controller.stop()


@contextmanager
def hanging_receiver() -> Iterator[int]:
    """A TCP server that accepts every connection and never answers; yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


def free_port() -> int:
    """A port nothing listens on now (a refusing receiver, or one to bind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
