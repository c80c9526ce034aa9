"""What `runner serve` answers besides its documents: a read error as one line with its
status code, the iteration number a URL names, and the listening socket bound before uvicorn
starts (a taken address is one line)."""

from __future__ import annotations

import socket

from starlette.requests import Request
from starlette.responses import JSONResponse

from runner_core.views.text import error_line
from runner_shell.errors import UserFacingError, os_error_message
from runner_shell.store.files import FileTooLarge


def not_found(error: Exception) -> JSONResponse:
    return JSONResponse({"error": str(error)}, status_code=404)


def unreadable(error: Exception) -> JSONResponse:
    """The answer to a read error: 404 for what a user asked that does not exist, 413 for a file
    too large to serve, 409 for a file, git object or archive the run holds but that could not
    be read (an agent's symlink or FIFO, damage); the error is one line, never a traceback."""
    if isinstance(error, FileTooLarge):
        return JSONResponse({"error": f"{error.size} bytes; at most {error.limit} are served"}, 413)
    if isinstance(error, UserFacingError):
        return not_found(error)
    if isinstance(error, OSError):
        message = os_error_message(error)
        if message is None:  # RUNNER_DEBUG: the traceback is wanted
            raise error
        return JSONResponse({"error": error_line(message)}, status_code=409)
    return JSONResponse({"error": error_line(str(error))}, status_code=409)


def iteration_number(request: Request) -> int:
    """The iteration a URL names, in the one spelling `runner show` prints (no sign, no
    leading zero)."""
    wanted = request.path_params["number"]
    if not (wanted.isascii() and wanted.isdigit()) or str(int(wanted)) != wanted or wanted == "0":
        raise UserFacingError(f"no iteration {wanted!r}")
    return int(wanted)


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listening_socket(host: str, port: int) -> socket.socket:
    """The bound socket uvicorn serves on: bound here so that a taken address fails in one
    line, before uvicorn logs its own, and so that port 0's real port is known to print."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise UserFacingError(
            f"serve: cannot listen on {host}:{port}: {error.strerror or error} "
            "(pick another --port or --host)"
        ) from None
    return listening
