"""The key a loop and its workers seal jobs and answers with (docs/temporal.md, "Sealed").

A key file is one line, `runner-key-v1 <64 hex digits>` (32 random bytes: an AES-256-GCM key),
mode 0600, made by `runner workers --new-key PATH`. A key file anyone but its owner may read
or write is refused, as ssh refuses such a private key. The key's id (the first 16 hex digits
of its SHA-256) names it in each sealed payload's metadata, so a payload sealed with another
key is told apart from one that was tampered with.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

import attrs

from runner_shell.errors import UserFacingError

KEY_PREFIX = "runner-key-v1"
KEY_BYTES = 32
MAKE_ONE = "make one with 'runner workers --new-key PATH'"


@attrs.frozen(slots=True, repr=False)
class JobKey:
    """A sealing key and its id (the key never printed: repr names the id only)."""

    secret: bytes
    key_id: str

    def __repr__(self) -> str:
        return f"JobKey(key_id={self.key_id!r})"


def key_of(secret: bytes) -> JobKey:
    if len(secret) != KEY_BYTES:
        raise ValueError(f"a job key is {KEY_BYTES} bytes, not {len(secret)}")
    return JobKey(secret, hashlib.sha256(secret).hexdigest()[:16])


def new_key_file(path: Path) -> JobKey:
    """A new random key written to `path` (mode 0600, never over an existing file)."""
    key = key_of(os.urandom(KEY_BYTES))
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise UserFacingError(f"{path}: already exists; a key file is never overwritten") from None
    except OSError as error:
        raise UserFacingError(f"{path}: cannot be created: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        os.fchmod(file.fileno(), 0o600)  # whatever the umask
        file.write(f"{KEY_PREFIX} {key.secret.hex()}\n")
        file.flush()
        os.fsync(file.fileno())
    return key


def read_key_file(path: Path, what: str) -> JobKey:
    """The key in `path`; one line naming `what` (the option or key that named the file) and
    the fix when it is missing, malformed, or readable by anyone but its owner."""
    try:
        descriptor = os.open(path.expanduser(), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        reason = "a symbolic link" if error.errno == errno.ELOOP else error.strerror
        raise UserFacingError(f"{what}: {path}: cannot be read ({reason}); {MAKE_ONE}") from None
    with os.fdopen(descriptor, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise UserFacingError(f"{what}: {path}: not a regular file")
        if found.st_mode & 0o077:
            mode = stat.S_IMODE(found.st_mode)
            raise UserFacingError(
                f"{what}: {path}: mode {mode:04o} lets others read it; chmod 600 {path}"
            )
        if found.st_uid != os.geteuid():
            raise UserFacingError(f"{what}: {path}: owned by another user")
        text = file.read(256)
    parts = text.decode("ascii", errors="replace").split()
    try:
        if len(parts) != 2 or parts[0] != KEY_PREFIX:
            raise ValueError
        return key_of(bytes.fromhex(parts[1]))
    except ValueError:
        raise UserFacingError(f"{what}: {path}: not a runner key file; {MAKE_ONE}") from None


@attrs.frozen(slots=True)
class TLSFiles:
    """TLS to the server as files name it: the root CA, a client certificate and its key
    (each None when not given: the system's roots, no client certificate)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None


CONFIG_TLS_NAMES = ("executor.tls_ca", "executor.tls_cert", "executor.tls_key")
OPTION_TLS_NAMES = ("--tls-ca", "--tls-cert", "--tls-key")


def read_tls_files(ca: str, cert: str, key: str, names: tuple[str, str, str]) -> TLSFiles:
    """The bytes of each file named ("" for none); one line naming its key or option (`names`)
    and the file when one cannot be read, and when a client certificate comes without its
    key."""
    if bool(cert) != bool(key):
        missing = names[2] if cert else names[1]
        raise UserFacingError(f"{missing}: a client certificate and its key come together")
    return TLSFiles(_tls_bytes(ca, names[0]), _tls_bytes(cert, names[1]), _tls_bytes(key, names[2]))


def _tls_bytes(path: str, what: str) -> bytes | None:
    if not path:
        return None
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as error:
        raise UserFacingError(f"{what}: {path}: cannot be read ({error.strerror})") from None
    if b"-----BEGIN " not in data:
        raise UserFacingError(f"{what}: {path}: not a PEM file")
    return data
