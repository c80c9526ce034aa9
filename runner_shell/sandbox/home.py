"""A backend's private HOME: only the files its CLI reads to reach its configured endpoint.

The sandboxed agent never sees the operator's HOME. Before each session the runner empties the
private HOME it made and copies in, from the real HOME, the few files the backend reads
(docs/sandbox.md lists them): what an agent planted there last time (a hook in settings.json,
a forged config) is gone, and what it changes now never reaches the operator's own files.
Never copies anything else, and never writes the real HOME.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from runner_core.backends.registry import BACKENDS
from runner_shell.store.removal import empty_directory

# Variables that would send a tool back to the operator's directories instead of $HOME's: each
# backend's own (inside, its files sit at their default places) and XDG's.
_MOVED_AWAY = (
    *sorted({files.variable for info in BACKENDS.values() for files in info.home} - {""}),
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
)
# A credentials or settings file is kilobytes; ~/.claude.json grows with history, not this far.
COPY_LIMIT_BYTES = 64 * 1024 * 1024


def home_files(backend: str) -> tuple[str, ...]:
    """The files `backend` gets in its private HOME, relative to it (the documented list)."""
    return tuple(
        os.path.join(files.directory, name)
        for files in BACKENDS[backend].home
        for name in files.names
    )


def prepare_home(home: Path, backend: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Refill `home` for a `backend` session; returns `environ` as the session must see it.

    `home` is a directory the runner made (never the real HOME); it is emptied first. A file
    the operator does not have is left out. The environment names `home` as HOME and drops
    the variables that would point the backend back at the operator's own directories, and
    sets those that tell the backend's CLI it is sandboxed (docs/sandbox.md).
    """
    real_home = Path(environ.get("HOME") or os.path.expanduser("~"))
    if home.resolve() == real_home.resolve():
        raise ValueError(f"the private HOME must not be the real one ({home})")
    _empty(home)
    for files in BACKENDS[backend].home:
        variable, directory = files.variable, files.directory
        moved = bool(variable) and bool(environ.get(variable))
        source_dir = Path(environ[variable]) if moved else real_home / directory
        target_dir = home / directory
        target_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in files.names:
            _copy_if_present(source_dir / name, target_dir / name)
    env = {name: value for name, value in environ.items() if name not in _MOVED_AWAY}
    env.update(BACKENDS[backend].sandboxed_env)
    env["HOME"] = str(home)
    return env


def _empty(directory: Path) -> None:
    empty_directory(directory)  # any depth, any modes, never through a symlink


def _copy_if_present(source: Path, target: Path) -> None:
    try:
        with open(source, "rb") as handle:
            data = handle.read(COPY_LIMIT_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return
    if len(data) > COPY_LIMIT_BYTES:
        raise OSError(f"{source} is larger than {COPY_LIMIT_BYTES} bytes; not copied")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
