"""How a process the agent controls is confined: the one place the step asks the sandbox.

Every agent session, guard and slot setup command is started with the `Confinement` that
`Sandbox` gives (runner_shell.sandbox builds bubblewrap's view from it): the system's
directories read-only, the program's own directory and runtime, the slot writable at
/checkout, the directory it writes its output to at /iteration, a private HOME (at
/sandbox-home) and /tmp, the network only when asked; the run's
repository and every home directory are simply not there. With the sandbox off
(`[sandbox] mode = "off"`, or bubblewrap unusable under "auto") there is no confinement and the
process runs as given. Either way its environment is the allow-list of
runner_core.run.environment (`session_env`, `guard_env`, `setup_env`).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from runner_core.run.environment import agent_environment, guard_environment
from runner_shell.sandbox.bwrap import Confinement
from runner_shell.sandbox.home import prepare_home
from runner_shell.sandbox.seen_at import CHECKOUT, ITERATION, SANDBOX_HOME
from runner_shell.sandbox.status import SandboxRefused, SandboxStatus
from runner_shell.scratch.setup_outputs import setup_outputs


def runs_confined(sandbox: Sandbox | None) -> bool:
    """Whether a process started with `sandbox` runs inside bubblewrap, and so sees the fixed
    paths of runner_shell/sandbox/seen_at.py rather than its host paths."""
    return sandbox is not None and sandbox.status.bwrap is not None


@attrs.frozen(slots=True)
class Sandbox:
    """This step's sandbox: its status, the directories its processes must not see and where
    their private HOMEs are made."""

    status: SandboxStatus
    hide: tuple[Path, ...]  # the run's repository and its git directory
    homes: Path  # private HOMEs, one per kind of process, beside the slot
    shared: tuple[Path, ...] = ()  # read-only inside: the run's objects the slot borrows
    writable: tuple[Path, ...] = ()  # `[sandbox] writable`: writable inside as well
    agent_variables: tuple[str, ...] = ()  # `[sandbox] env`: what an agent also gets
    guard_variables: tuple[str, ...] = ()  # `[guard] env`: what a guard also gets

    def confine(
        self,
        argv: Sequence[str],
        work_dir: Path,
        output: Path | None,
        network: bool,
        home_name: str,
        read_only: Sequence[Path] = (),
    ) -> Confinement | None:
        """The confinement of `argv` started in `work_dir` (seen at /checkout) writing its
        output to `output` (seen at /iteration), or None with the sandbox off."""
        if self.status.bwrap is None:
            return None
        home = self.homes / home_name
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        # What `[sandbox] setup` made is read-only to every process but setup itself.
        made = () if home_name == "setup" else setup_outputs(work_dir)
        confinement = self.status.confine(
            work_dir.resolve(),
            home.resolve(),
            writable=tuple(path.resolve() for path in self.writable),
            output=None if output is None else output.resolve(),
            read_only=(
                *(path for path in runtime_paths(argv) if not self.hides(path)),
                *(path.resolve() for path in (*self.shared, *read_only, *made)),
            ),
            hide=self.hide,
            network=network,
        )
        if confinement is None or home_name != "setup":
            return confinement
        return attrs.evolve(confinement, disk_watched=False)

    def hides(self, path: Path) -> bool:
        """Whether `path` is in (or is) a directory its processes must not see."""
        return any(path.is_relative_to(hidden) for hidden in self.hide)

    def session_env(self, backend: str, env: Mapping[str, str]) -> dict[str, str]:
        """An agent session's environment (the allow-list's part of `env`) with its private
        HOME holding what `backend` needs."""
        allowed = agent_environment(env, backend, self.agent_variables)
        if self.status.bwrap is None:
            return allowed
        home = self.homes / "agent"
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return prepare_home(home.resolve(), backend, allowed)

    def guard_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """A guard's environment: the allow-list's part of `env` (no key, no token), its HOME a
        private, empty one when confined."""
        allowed = guard_environment(env, self.guard_variables)
        if self.status.bwrap is None:
            return allowed
        return {**allowed, "HOME": str((self.homes / "guard").resolve())}

    def setup_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`[sandbox] setup`'s environment: a guard's (it runs the checkout's own build), with
        the setup's private HOME when confined."""
        allowed = guard_environment(env, self.guard_variables)
        if self.status.bwrap is None:
            return allowed
        home = self.homes / "setup"
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return {**allowed, "HOME": str(home.resolve())}


def refuse_seen_places(named: Iterable[tuple[str, Path]]) -> None:
    """SandboxRefused when a path the sandbox must show at its own path (the run's repository,
    whose git directory holds the slots' object stores; a `[sandbox] read_only` or `writable`
    entry, each named by what it is) lies where the sandbox shows the checkout, the output
    directory or the private HOME."""
    for what, path in named:
        for place in (CHECKOUT, ITERATION, SANDBOX_HOME):
            if path.is_relative_to(place):
                raise SandboxRefused(
                    f"sandbox: {what} {path} lies under {place}, where the sandbox shows its "
                    'own: move it elsewhere, or set [sandbox] mode = "off" in '
                    ".runner/state/config.toml"
                )


def runtime_paths(argv: Sequence[str]) -> tuple[Path, ...]:
    """What a confined program needs to start, since nothing outside the system's directories
    is there unless named: the directory of its program (the link's and the file's, and for a
    program inside a `node_modules`, that whole `node_modules`, its packages), the directory
    of its `#!` interpreter (`#!/usr/bin/env node` found on PATH, under ~/.nvm say), the
    directory of every absolute path in its argv, and the Python the runner runs on (its
    prefixes and import path, for the demo agent and for tools installed beside the runner).
    Read-only, resolved, existing directories only."""
    program = shutil.which(argv[0]) if argv else None
    named = [program] if program else []
    named.extend(arg for arg in argv[1:] if os.path.isabs(arg))
    found = set(_directories(named))
    if program:
        found.update(_program_runtime(program))
    return tuple(sorted({*found, *_runner_paths(tuple(sys.path))}))


def _program_runtime(program: str) -> set[Path]:
    """The directories `program` needs beyond its own: the link's, the packages beside it,
    its interpreter's."""
    found = {Path(program).absolute().parent}
    real = Path(program).resolve()
    for parent in real.parents:
        if parent.name == "node_modules":
            found.add(parent)
            break
    interpreter = _interpreter(real)
    if interpreter is not None:
        found.update(_directories((interpreter,)))
    return {path for path in found if path.is_dir() and path != Path("/")}


def _interpreter(script: Path) -> str | None:
    """The program a `#!` line starts (through `env`, as PATH finds it), or None."""
    try:
        with script.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [word for word in words[1:] if not word.startswith("-")]
        return shutil.which(rest[0]) if rest else None
    return words[0]


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
