"""Inside an agent's sandbox: the one way out of its network namespace, then the agent itself.

Run by the runner's own interpreter (`python -I -S -B bridge.py SOCKET PORT -- ARGV...`, the
standard library only) as the sandbox's first process: it listens on 127.0.0.1:PORT of the
sandbox's own loopback, forks a child that forwards every connection made there to the Unix
SOCKET (the runner's egress proxy, runner_shell.sandbox.proxy, bound in), and replaces itself
with ARGV, so the agent keeps its process id and its exit status is the session's. The child
dies with the sandbox's PID namespace when the agent ends. It decides nothing: the proxy does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

_CHUNK_BYTES = 64 * 1024
_BACKLOG = 128
_USAGE = "usage: bridge.py SOCKET PORT -- ARGV..."


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--" or not args[1].isdigit():
        print(_USAGE, file=sys.stderr)
        return 2
    socket_path, port, argv = args[0], int(args[1]), args[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as error:
        print(f"runner egress bridge: cannot listen on 127.0.0.1:{port}: {error}", file=sys.stderr)
        return 125
    listener.listen(_BACKLOG)
    if os.fork() == 0:
        _detach()
        _serve(listener, socket_path)
        os._exit(0)
    listener.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        print(f"runner egress bridge: cannot start {argv[0]}: {error.strerror}", file=sys.stderr)
    return 127


def _detach() -> None:
    """The forwarder holds none of the agent's streams: its log ends when the agent's does."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _address = listener.accept()
        except OSError:
            return
        threading.Thread(target=_forward, args=(client, socket_path), daemon=True).start()


def _forward(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends, then end `sink`'s writing side (a half-close, as TCP has)."""
    with contextlib.suppress(OSError):
        while data := source.recv(_CHUNK_BYTES):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
