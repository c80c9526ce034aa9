"""Whether the agent and guard run sandboxed here: `[sandbox] mode` against what bubblewrap does.

bubblewrap may be missing, or present but refused by the kernel (user namespaces disabled, a
container without the rights), and libseccomp may be missing; the only reliable test is to
start the full confinement once, which `probe` does with a deadline, once per boot
(probe_cache.py).
`auto` then sandboxes with every layer that holds and says in one line what does not; `bwrap`
refuses to run without every layer; `off` never sandboxes and says so. `SandboxStatus.layers`
is what `runner validate` and `runner status` print: each layer and whether it holds.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from runner_core.backends.egress import network_layer
from runner_core.run.config import Config, SandboxConfig
from runner_core.run.exit_codes import ExitCode
from runner_shell.errors import UserFacingError
from runner_shell.sandbox.limits import describe, sandbox_limits, tmp_bytes
from runner_shell.sandbox.probe_cache import cached_probe_result, program_key

# The confinement's modules (bwrap, its proxy and cgroups, seccomp, the visible system) are
# imported where a process is confined or bubblewrap probed: `runner validate` and `runner
# status` print the layers from a kept probe and start no sandbox.
if TYPE_CHECKING:
    from runner_shell.sandbox.bwrap import Confinement

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
    """What starting bubblewrap once showed: its program when it works, else why not, and
    why the seccomp filter is not loaded when bubblewrap works without it."""

    bwrap: str | None
    problem: str | None = None
    seccomp_problem: str | None = None


class SandboxRefused(UserFacingError):
    """`[sandbox] mode = "bwrap"` where bubblewrap does not work: no agent may run."""


@attrs.frozen(slots=True)
class SandboxStatus:
    """The sandbox in effect: `mode` is "bwrap" (confined) or "off" (not confined)."""

    configured: str  # `[sandbox] mode`: "auto" | "bwrap" | "off"
    bwrap: str | None  # the program, when mode is "bwrap"
    problem: str | None = None  # why bubblewrap is not usable, when it was tried
    seccomp_problem: str | None = None  # why the seccomp filter is not loaded, when not
    sandbox: SandboxConfig = attrs.field(factory=SandboxConfig)  # `[sandbox]`: its limits
    backend: str = "command"  # `[agent] backend`: whose hosts the egress proxy lets through

    @property
    def mode(self) -> str:
        return "off" if self.bwrap is None else "bwrap"

    def layers(self) -> tuple[tuple[str, str], ...]:
        """Each layer of the confinement and what holds it, in the order validate prints them:
        `sandbox=bwrap userns=yes caps=none seccomp=yes fs=listed env=listed net=host
        limits=rlimit`. The environment's allow-list holds also unsandboxed."""
        on = self.bwrap is not None
        return (
            ("sandbox", self.mode),
            ("userns", "yes" if on else "no"),
            ("caps", "none" if on else "host"),
            ("seccomp", "yes" if on and self.seccomp_problem is None else "no"),
            ("fs", "listed" if on else "host"),
            ("env", "listed"),
            ("net", network_layer(on, self.backend, self.sandbox.allow_hosts)),
            ("limits", describe(sandbox_limits(self.sandbox)) if on else "none"),
        )

    @property
    def line(self) -> str:
        """The layers as one `key=value ...` line."""
        return " ".join(f"{name}={value}" for name, value in self.layers())

    def missing(self) -> tuple[str, ...]:
        """Why each layer that could hold here does not, with bubblewrap working: libseccomp
        missing, prlimit missing."""
        if self.bwrap is None:
            return ()
        found = []
        if self.seccomp_problem is not None:
            found.append(f"seccomp=no ({self.seccomp_problem})")
        if sandbox_limits(self.sandbox) is None:
            found.append("limits=none (prlimit is not installed; Debian: util-linux)")
        return tuple(found)

    @property
    def notice(self) -> str | None:
        """The line `loop` and `step` print at their start when `auto` found no bubblewrap, or
        a layer missing; a user who chose `mode = "off"` is not told again at every start."""
        if self.configured == "off":
            return None
        if self.bwrap is None:
            why = f"bubblewrap not usable: {self.problem}"
            return f"runner: sandbox=off ({why}); the agent runs unsandboxed"
        missing = self.missing()
        if not missing:
            return None
        return f"runner: sandbox=bwrap without {'; '.join(missing)}"

    @property
    def refusal(self) -> str | None:
        """Why no agent may run: bubblewrap, or one of its layers, is required and missing."""
        if self.configured != "bwrap":
            return None
        if self.bwrap is None:
            return (
                f'sandbox: [sandbox] mode = "bwrap" but bubblewrap is not usable: {self.problem} '
                '(install bubblewrap, or set mode = "auto" in .runner/state/config.toml)'
            )
        missing = self.missing()
        if not missing:
            return None
        return (
            f'sandbox: [sandbox] mode = "bwrap" but {"; ".join(missing)} '
            '(install it, or set mode = "auto" in .runner/state/config.toml)'
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
        output: Path | None = None,
    ) -> Confinement | None:
        """How to confine one process, or None when the sandbox is off.

        `work_dir` is seen at /checkout, `home` at /sandbox-home and `output` (the directory
        it writes its output to) at /iteration; `writable` and `read_only` at their own paths.
        `hide` names directories that must not be reachable at all (the run's repository);
        the host's daemon and session sockets are hidden as well.
        """
        if self.bwrap is None:
            return None
        from runner_shell.sandbox.bwrap import Confinement, sandbox_ids
        from runner_shell.sandbox.visible import system_mounts

        return Confinement(
            system=system_mounts(),
            ids=sandbox_ids(),
            seccomp=self.seccomp_problem is None,
            tmp_bytes=tmp_bytes(self.sandbox),
            limits=sandbox_limits(self.sandbox),
            bwrap=self.bwrap,
            work_dir=work_dir,
            home=home,
            writable=writable,
            output=output,
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
        return SandboxStatus(configured, None, sandbox=config.sandbox, backend=config.agent_backend)
    result = (found or cached_probe)()
    return SandboxStatus(
        configured,
        result.bwrap,
        result.problem,
        result.seccomp_problem,
        config.sandbox,
        config.agent_backend,
    )


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
        key = f"bwrap-probe-v2:{program_key(program)}"
    except OSError:
        return probe()
    fresh: list[Probe] = []

    def works(result: dict[str, object]) -> bool:
        # Every layer held: a kept "works" never lowers what the next process confines with.
        return result == {"bwrap": program, "problem": None, "seccomp_problem": None}

    def compute() -> dict[str, object]:
        fresh.append(probe())
        return attrs.asdict(fresh[0])

    found = cached_probe_result(key, compute, keep=works)
    if fresh:
        return fresh[0]
    # A kept file can only say that this very program works; anything else is probed again.
    return Probe(program) if works(found) else probe()


def probe(search_path: str | None = None, timeout_secs: float = PROBE_TIMEOUT_SECS) -> Probe:
    """Start `true` in the sandbox every process gets (its own user namespace, the listed
    system, the seccomp filter, the limits), to learn whether bubblewrap works here; without
    the filter again when only the filter fails.

    `search_path` is where to look for bwrap (default: $PATH).
    """
    program = shutil.which("bwrap", path=search_path)
    if program is None:
        return Probe(None, "bwrap is not installed (Debian: apt-get install bubblewrap)")
    from runner_shell.sandbox.seccomp import SeccompUnavailable, filter_bpf

    seccomp_problem = None
    try:
        filter_bpf()
    except SeccompUnavailable as error:
        seccomp_problem = str(error)
    problem = _try(program, seccomp_problem is None, timeout_secs)
    if (
        problem is not None
        and seccomp_problem is None
        and _try(program, False, timeout_secs) is None
    ):
        return Probe(program, seccomp_problem=f"bwrap refused the filter: {problem}")
    if problem is not None:
        return Probe(None, problem)
    return Probe(program, seccomp_problem=seccomp_problem)


def _try(program: str, seccomp: bool, timeout_secs: float) -> str | None:
    """Why `true` did not run in the full confinement, or None when it did."""
    import subprocess
    import tempfile

    from runner_shell.sandbox.bwrap import Confinement, launch, sandbox_ids
    from runner_shell.sandbox.visible import system_mounts

    true = "/usr/bin/true" if Path("/usr/bin/true").exists() else shutil.which("true") or "true"
    with tempfile.TemporaryDirectory(prefix="runner-sandbox-probe-") as scratch:
        room = Path(scratch).resolve()
        confinement = Confinement(
            bwrap=program,
            work_dir=room,
            home=room,
            system=system_mounts(),
            ids=sandbox_ids(),
            seccomp=seccomp,
            tmp_bytes=tmp_bytes(SandboxConfig()),
            limits=sandbox_limits(SandboxConfig()),
        )
        try:
            with launch(confinement, (true,), {}) as started:
                finished = subprocess.run(
                    started.argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    pass_fds=started.fds,
                    timeout=timeout_secs,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            return f"bwrap did not start within {timeout_secs:g} s"
        except OSError as error:
            return f"cannot start {program}: {error.strerror or error}"
    if finished.returncode != 0:
        return _reason(finished.stderr, finished.returncode)
    return None


def _reason(stderr: bytes, exit_code: int) -> str:
    from runner_core.views.text import error_line

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
