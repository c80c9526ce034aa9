"""Whether the agent and guard run sandboxed here: `[sandbox] mode` against what bubblewrap does.

bubblewrap may be missing, or present but refused by the kernel (user namespaces disabled, a
container without the rights); the only reliable test is to start it once, which `probe` does
with a deadline, once per boot (probe_cache.py). `auto` then sandboxes or says in one line that it
does not; `bwrap` refuses to run unsandboxed; `off` never sandboxes and says so.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs

from runner_core.run.config import Config
from runner_core.run.exit_codes import ExitCode
from runner_core.views.text import error_line
from runner_shell.errors import UserFacingError
from runner_shell.sandbox.bwrap import Confinement, launch
from runner_shell.sandbox.probe_cache import cached_probe_result, program_key

# Starting a sandbox takes milliseconds; a probe this slow means something is wrong with it.
PROBE_TIMEOUT_SECS = 10.0
_REASON_MAX_CHARS = 200
# Host sockets a read-only mount does not protect (connecting needs no write access to the
# file system): the container daemons and the user's session bus, keyring and agents.
HOST_SOCKET_DIRS = (Path("/run/user"), Path("/run/dbus"), Path("/run/containerd"))
HOST_SOCKET_FILES = (
    Path("/run/docker.sock"),
    Path("/var/run/docker.sock"),
    Path("/run/podman/podman.sock"),
)


@attrs.frozen(slots=True)
class Probe:
    """What starting bubblewrap once showed: its program when it works, else why not."""

    bwrap: str | None
    problem: str | None = None


class SandboxRefused(UserFacingError):
    """`[sandbox] mode = "bwrap"` where bubblewrap does not work: no agent may run."""


@attrs.frozen(slots=True)
class SandboxStatus:
    """The sandbox in effect: `mode` is "bwrap" (confined) or "off" (not confined)."""

    configured: str  # `[sandbox] mode`: "auto" | "bwrap" | "off"
    bwrap: str | None  # the program, when mode is "bwrap"
    problem: str | None = None  # why bubblewrap is not usable, when it was tried

    @property
    def mode(self) -> str:
        return "off" if self.bwrap is None else "bwrap"

    @property
    def notice(self) -> str | None:
        """The line `loop` and `step` print at their start when `auto` found no bubblewrap; a
        user who chose `mode = "off"` is not told again at every start."""
        if self.bwrap is not None or self.configured == "off":
            return None
        why = f"bubblewrap not usable: {self.problem}"
        return f"runner: sandbox=off ({why}); the agent runs unsandboxed"

    @property
    def refusal(self) -> str | None:
        """Why no agent may run: bubblewrap is required and does not work."""
        if self.configured != "bwrap" or self.bwrap is not None:
            return None
        return (
            f'sandbox: [sandbox] mode = "bwrap" but bubblewrap is not usable: {self.problem} '
            '(install bubblewrap, or set mode = "auto" in .runner/state/config.toml)'
        )

    def require(self) -> SandboxStatus:
        """This status, or SandboxRefused when the configuration forbids running without it."""
        refusal = self.refusal
        if refusal is not None:
            raise SandboxRefused(refusal, ExitCode.ERROR)
        return self

    def confine(
        self,
        work_dir: Path,
        home: Path,
        *,
        writable: tuple[Path, ...] = (),
        read_only: tuple[Path, ...] = (),
        hide: tuple[Path, ...] = (),
        network: bool,
    ) -> Confinement | None:
        """How to confine one process, or None when the sandbox is off.

        `hide` names directories that must not be reachable at all (the run's repository);
        the host's daemon and session sockets are hidden as well.
        """
        if self.bwrap is None:
            return None
        return Confinement(
            bwrap=self.bwrap,
            work_dir=work_dir,
            home=home,
            writable=writable,
            read_only=read_only,
            hidden_dirs=(*hide, *(path for path in HOST_SOCKET_DIRS if path.is_dir())),
            # /var/run is usually /run: one mount per socket.
            hidden_files=tuple(
                sorted({path.resolve() for path in HOST_SOCKET_FILES if _exists(path)})
            ),
            network=network,
        )


def sandbox_status(config: Config, found: Callable[[], Probe] | None = None) -> SandboxStatus:
    """The sandbox `config` gets on this machine; never raises (see `SandboxStatus.require`).

    `found` learns whether bubblewrap works (by default one probe per runner process); mode
    "off" never asks.
    """
    configured = config.sandbox.mode
    if configured == "off":
        return SandboxStatus(configured, None)
    result = (found or cached_probe)()
    return SandboxStatus(configured, result.bwrap, result.problem)


def sandbox_at_start(config: Config, notice: Callable[[str], None]) -> SandboxStatus:
    """The sandbox a `loop` or `step` runs with: SandboxRefused when it is required and not
    usable, else its status, after giving `notice` the one-line notice when it is off."""
    status = sandbox_status(config).require()
    if status.notice is not None:
        notice(status.notice)
    return status


@functools.cache
def cached_probe() -> Probe:
    """`probe()`, once per boot: whether bubblewrap works does not change under a runner, nor
    until the program, the kernel or the boot does (runner_shell/sandbox/probe_cache.py). Only
    "it works" is kept; a failure is probed again by the next process."""
    program = shutil.which("bwrap")
    if program is None:
        return probe()
    try:
        key = f"bwrap-probe-v1:{program_key(program)}"
    except OSError:
        return probe()
    fresh: list[Probe] = []

    def works(result: dict[str, object]) -> bool:
        return result == {"bwrap": program, "problem": None}

    def compute() -> dict[str, object]:
        fresh.append(probe())
        return attrs.asdict(fresh[0])

    found = cached_probe_result(key, compute, keep=works)
    if fresh:
        return fresh[0]
    # A kept file can only say that this very program works; anything else is probed again.
    return Probe(program) if works(found) else probe()


def probe(search_path: str | None = None, timeout_secs: float = PROBE_TIMEOUT_SECS) -> Probe:
    """Start `true` in the sandbox every process gets, to learn whether bubblewrap works here.

    `search_path` is where to look for bwrap (default: $PATH).
    """
    program = shutil.which("bwrap", path=search_path)
    if program is None:
        return Probe(None, "bwrap is not installed (Debian: apt-get install bubblewrap)")
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="runner-sandbox-probe-") as scratch:
        room = Path(scratch).resolve()
        confinement = Confinement(bwrap=program, work_dir=room, home=room)
        try:
            with launch(confinement, (true,), {}) as (argv, fds):
                finished = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    pass_fds=fds,
                    timeout=timeout_secs,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            return Probe(None, f"bwrap did not start within {timeout_secs:g} s")
        except OSError as error:
            return Probe(None, f"cannot start {program}: {error.strerror or error}")
    if finished.returncode != 0:
        return Probe(None, _reason(finished.stderr, finished.returncode))
    return Probe(program)


def _reason(stderr: bytes, exit_code: int) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return f"bwrap exited with status {exit_code}"
    reason = error_line(lines[-1].strip().removeprefix("bwrap: "))
    return reason if len(reason) <= _REASON_MAX_CHARS else reason[:_REASON_MAX_CHARS] + "..."


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False
