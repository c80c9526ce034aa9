"""A TCP relay on loopback the test controls, in front of the Temporal server: `cut()` drops
every connection through it and refuses new ones (a partition, calls in flight broken), and
`heal()` lets them through again on the same port; `stall()` keeps every connection but
forwards nothing (a partition in silence: a call waits out its deadline instead of failing at
once) until `resume()`. Root-free, unlike a network namespace."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from tests.temporal.conftest import free_port

CHUNK = 65536


class Relay:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._stalled = threading.Event()
        self.heal()

    def stall(self) -> None:
        self._stalled.set()

    def resume(self) -> None:
        self._stalled.clear()

    def heal(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, set()
        if listener is not None:
            listener.close()
        for each in sockets:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=_pump, args=(source, sink, self._stalled), daemon=True
                ).start()


def _pump(source: socket.socket, sink: socket.socket, stalled: threading.Event) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(CHUNK):
            if not stalled.is_set():  # stalled: what was sent is lost, as on a silent link
                sink.sendall(data)
    for each in (source, sink):
        with contextlib.suppress(OSError):
            each.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def relay_to(address: str) -> Iterator[Relay]:
    host, _, port = address.rpartition(":")
    relay = Relay((host, int(port)))
    try:
        yield relay
    finally:
        relay.close()
