"""What a sandbox probe learned, kept for the rest of the boot instead of learned per process.

Whether bubblewrap can start a sandbox depends on the program, the kernel and how the machine
was booted (user namespaces enabled, the container's rights), none of which a runner process
changes. `cached_probe_result(key, compute)` runs `compute` once per boot for a `key` (the
caller's own description of what it probes: for bwrap, `program_key(path)`, which changes when
the program is replaced or upgraded) and afterwards reads the result back from a small file.

The file is keyed by the key, the kernel (`uname -r` and `-v`), the boot id
(/proc/sys/kernel/random/boot_id) and the user, lives in a directory only the user can write
($XDG_RUNTIME_DIR/runner, else $XDG_CACHE_HOME/runner or ~/.cache/runner, mode 0700), and is
ignored when it is not the user's own, is writable by anyone else, or does not hold exactly
the key it is named for. Callers keep only what fails closed: the sandbox probe keeps "bwrap
works", never "it does not" (a forged "works" only makes the next launch fail; a forged "does
not" would let `mode = "auto"` run the agent unconfined), via `keep`. When the directory cannot
be written the result is computed again each time, as before. Writing a result removes the
user's results of other boots: the directory holds this boot's alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_PREFIX = "probe-"


def cached_probe_result(
    key: str,
    compute: Callable[[], JsonObject],
    *,
    keep: Callable[[JsonObject], bool] = lambda _result: True,
    directory: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> JsonObject:
    """`compute()`'s result for `key` on this boot: read back when kept before, else computed
    (and kept when `keep` says so). `compute` returns a JSON object."""
    folder = directory if directory is not None else cache_directory(environ or os.environ)
    full_key = boot_key(key)
    # The name only spreads keys over files (each holds its whole key, checked on reading):
    # a checksum, not a digest, as hashlib's OpenSSL costs every command a few milliseconds.
    path = folder / f"{_PREFIX}{zlib.crc32(full_key.encode()):08x}.json"
    kept = _read(path, full_key)
    if kept is not None:
        return kept
    result = compute()
    if keep(result):
        _write(folder, path, full_key, result)
    return result


def program_key(program: str) -> str:
    """A key for an executable that changes when it is replaced, upgraded or moved: its
    resolved path, inode, size and modification times (no process started to ask its version)."""
    resolved = os.path.realpath(program)
    info = os.stat(resolved)
    fields = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    return ":".join((resolved, *map(str, fields)))


def boot_key(key: str) -> str:
    """`key` with what makes a probe's answer last only this boot, on this kernel, for this user."""
    uname = os.uname()
    try:
        boot = BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        boot = "unknown-boot"
    return "\0".join((key, uname.release, uname.version, boot, str(os.getuid())))


def cache_directory(environ: Mapping[str, str]) -> Path:
    """Where kept results live: per boot under XDG_RUNTIME_DIR, else the user's cache."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "runner"
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".cache"
    )
    return Path(cache) / "runner"


def _read(path: Path, full_key: str) -> JsonObject | None:
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            document = json.loads(file.read(65_536))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("key") != full_key:
        return None
    result = document.get("result")
    return result if isinstance(result, dict) else None


def _write(folder: Path, path: Path, full_key: str, result: JsonObject) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return
        temporary = folder / f".{path.name}.{os.getpid()}.tmp"
        descriptor = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600
        )
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump({"key": full_key, "result": result}, file, sort_keys=True)
        os.replace(temporary, path)
    except OSError:
        return
    _forget_other_boots(folder, path)


def _forget_other_boots(folder: Path, written: Path) -> None:
    """Remove the user's kept results of other boots, kernels or users (never read again):
    only a result of this boot is kept. Runs when a result is written, once per boot and key."""
    this_boot = boot_key("")  # what every key boot_key made this boot ends with
    for path in folder.glob(f"{_PREFIX}*.json"):
        if path == written:
            continue
        try:
            with open(path, "rb") as file:
                if os.fstat(file.fileno()).st_uid != os.getuid():
                    continue
                document = json.loads(file.read(65_536))
            key = document.get("key") if isinstance(document, dict) else None
            if isinstance(key, str) and key.endswith(this_boot):
                continue
        except ValueError:
            pass  # not a kept result any more: removed like one of another boot
        except OSError:
            continue
        with contextlib.suppress(OSError):
            path.unlink()
