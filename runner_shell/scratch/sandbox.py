"""How a process the agent controls is confined: the one place the step asks the sandbox.

Every agent session, guard and slot setup command is started with the `Confinement` that
`Sandbox` gives (runner_shell.sandbox builds bubblewrap's view from it): the system read-only,
the slot writable with the binds its caller names, the run's repository hidden, a private HOME
and /tmp, the network only when asked. With the sandbox off (`[sandbox] mode = "off"`, or
bubblewrap unusable under "auto") there is no confinement and the process runs as given.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from runner_shell.sandbox.bwrap import Confinement
from runner_shell.sandbox.home import prepare_home
from runner_shell.sandbox.status import SandboxStatus
from runner_shell.scratch.setup_outputs import setup_outputs


@attrs.frozen(slots=True)
class Sandbox:
    """This step's sandbox: its status, the directories its processes must not see and where
    their private HOMEs are made."""

    status: SandboxStatus
    hide: tuple[Path, ...]  # the run's repository and its git directory
    homes: Path  # private HOMEs, one per kind of process, beside the slot
    shared: tuple[Path, ...] = ()  # read-only inside: the run's objects the slot borrows
    writable: tuple[Path, ...] = ()  # `[sandbox] writable`: writable inside as well

    def confine(
        self,
        argv: Sequence[str],
        work_dir: Path,
        writable: Sequence[Path],
        network: bool,
        home_name: str,
        read_only: Sequence[Path] = (),
    ) -> Confinement | None:
        """The confinement of `argv` started in `work_dir`, or None with the sandbox off."""
        if self.status.bwrap is None:
            return None
        home = self.homes / home_name
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        # What `[sandbox] setup` made is read-only to every process but setup itself.
        made = () if home_name == "setup" else setup_outputs(work_dir)
        return self.status.confine(
            work_dir.resolve(),
            home.resolve(),
            writable=tuple(path.resolve() for path in (*writable, *self.writable)),
            read_only=(
                *(path for path in runtime_paths(argv) if not self.hides(path)),
                *(path.resolve() for path in (*self.shared, *read_only, *made)),
            ),
            hide=self.hide,
            network=network,
        )

    def hides(self, path: Path) -> bool:
        """Whether `path` is in (or is) a directory its processes must not see."""
        return any(path.is_relative_to(hidden) for hidden in self.hide)

    def session_env(self, backend: str, env: Mapping[str, str]) -> dict[str, str]:
        """An agent session's environment with its private HOME holding what `backend` needs."""
        if self.status.bwrap is None:
            return dict(env)
        home = self.homes / "agent"
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return prepare_home(home.resolve(), backend, env)

    def guard_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """A guard's environment: its HOME is a private, empty one when confined."""
        if self.status.bwrap is None:
            return dict(env)
        return {**env, "HOME": str((self.homes / "guard").resolve())}


def runtime_paths(argv: Sequence[str]) -> tuple[Path, ...]:
    """What a confined program needs to start though it may sit under the private /tmp or the
    hidden repository: the directory of its program and of every absolute path in its argv,
    and the Python the runner runs on (its prefixes and import path, for the demo agent and
    for tools installed beside the runner). Read-only, resolved, existing directories only."""
    program = shutil.which(argv[0]) if argv else None
    named = [program] if program else []
    named.extend(arg for arg in argv[1:] if os.path.isabs(arg))
    return tuple(sorted({*_directories(named), *_runner_paths(tuple(sys.path))}))


@functools.cache
def _runner_paths(import_path: tuple[str, ...]) -> frozenset[Path]:
    """The Python the runner runs on and its packages (an editable install's source included),
    for the demo agent: resolved once for each import path the process has."""
    own = str(Path(__file__).resolve().parents[2])
    return _directories((sys.prefix, sys.base_prefix, sys.exec_prefix, *import_path, own))


def _directories(texts: Iterable[str]) -> frozenset[Path]:
    found: set[Path] = set()
    for text in texts:
        if not text:
            continue
        path = Path(text).resolve()
        directory = path if path.is_dir() else path.parent
        if directory.is_dir() and directory != Path("/"):
            found.add(directory)
    return frozenset(found)
