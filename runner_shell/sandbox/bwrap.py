"""The bubblewrap command line of one sandboxed process, and the launch that keeps it private.

`bwrap_options` is pure: the same confinement and environment give the same options. The
order matters to bwrap (a mount covers whatever was mounted inside its path before it): the
system read-only and fresh /dev and /proc first, then every other mount outer path first, so a
work directory under the private /tmp or under a hidden repository is still there.

`launch` hands the options to bwrap through a memory file rather than its command line, where
every user of the machine could read the environment's secrets in /proc.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from runner_shell.sandbox.proxy import BRIDGE_PATH, BRIDGE_SOURCE, PROXY_SOCKET, proxy_env


@attrs.frozen(slots=True)
class Confinement:
    """What one sandboxed process sees, writes and reaches.

    Every path is absolute and resolved (no symlinks), and bound at the same path inside, so
    paths in the environment and in prompts mean the same thing on both sides.
    """

    bwrap: str  # the bubblewrap program, as the probe found it
    work_dir: Path  # the one writable checkout; the process starts here
    home: Path  # a private HOME the runner made; writable, becomes $HOME's directory
    writable: tuple[Path, ...] = ()  # e.g. the iteration directory the agent writes to
    read_only: tuple[Path, ...] = ()  # e.g. the output schema inside a hidden repository
    hidden_dirs: tuple[Path, ...] = ()  # an empty read-only tmpfs, e.g. the run's repository
    hidden_files: tuple[Path, ...] = ()  # replaced by /dev/null, e.g. a daemon's socket
    network: bool = False  # False: only a loopback of its own, no route anywhere
    # The egress proxy's Unix socket (runner_shell.sandbox.proxy): with network False, the one
    # way out; the argv must then be started by the bridge (`proxy.bridged_argv`).
    proxy_socket: Path | None = None

    def __attrs_post_init__(self) -> None:
        paths = (
            self.work_dir,
            self.home,
            *self.writable,
            *self.read_only,
            *self.hidden_dirs,
            *self.hidden_files,
        )
        for path in paths:
            if not path.is_absolute():
                raise ValueError(f"sandbox paths must be absolute, got {str(path)!r}")
        if self.proxy_socket is not None and self.network:
            raise ValueError("a proxied sandbox has no network of its own: network=False")


def bwrap_options(confinement: Confinement, env: Mapping[str, str]) -> tuple[str, ...]:
    """bwrap's options (everything before `--` and the command) for `confinement`.

    The process gets exactly `env` (bwrap adds only PWD), its own PID, IPC and UTS namespaces,
    a new session (no terminal to inject keystrokes into) and dies with its bwrap, taking every
    process it started along: a PID namespace ends with its first process.
    """
    mounts = [
        (Path("/tmp"), "--tmpfs", ()),
        *((path, "--tmpfs", ()) for path in confinement.hidden_dirs),
        *((path, "--ro-bind", ("/dev/null",)) for path in confinement.hidden_files),
        *((path, "--ro-bind", (str(path),)) for path in confinement.read_only),
        *(
            (path, "--bind", (str(path),))
            for path in (*confinement.writable, confinement.work_dir, confinement.home)
        ),
    ]
    options: list[str] = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # A mount covers what was mounted inside its path before it: outer paths go first.
    for path, kind, source in sorted(mounts, key=lambda mount: len(mount[0].parts)):
        options += [kind, *source, str(path)]
    # Read-only only now: the binds under a hidden directory needed their mount points made.
    for directory in confinement.hidden_dirs:
        options += ["--remount-ro", str(directory)]
    options += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not confinement.network:
        options.append("--unshare-net")
    options += ["--die-with-parent", "--new-session", "--chdir", str(confinement.work_dir)]
    options.append("--clearenv")
    for name, value in sorted(env.items()):
        options += ["--setenv", name, value]
    options += egress_options(confinement.proxy_socket)
    return tuple(options)


def egress_options(proxy_socket: Path | None) -> list[str]:
    """The way out of a network namespace through the egress proxy: its socket and the bridge
    bound in after every other mount (so nothing covers them), and the proxy variables set
    after the environment's own (a caller's NO_PROXY would send loopback around the proxy)."""
    if proxy_socket is None:
        return []
    options = ["--bind", str(proxy_socket), PROXY_SOCKET, "--ro-bind", str(BRIDGE_SOURCE)]
    options += [BRIDGE_PATH, "--unsetenv", "NO_PROXY", "--unsetenv", "no_proxy"]
    for name, value in sorted(proxy_env().items()):
        options += ["--setenv", name, value]
    return options


@contextlib.contextmanager
def launch(
    confinement: Confinement, argv: Sequence[str], env: Mapping[str, str]
) -> Iterator[tuple[tuple[str, ...], tuple[int, ...]]]:
    """`(argv to start, descriptors to pass)` for `argv` in the sandbox, valid inside the block.

    The started process must inherit the descriptors (`pass_fds`); they close on leaving.
    """
    fd = os.memfd_create("runner-bwrap-args", os.MFD_CLOEXEC)
    try:
        payload = b"".join(
            os.fsencode(option) + b"\0" for option in bwrap_options(confinement, env)
        )
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        yield (confinement.bwrap, "--args", str(fd), "--", *argv), (fd,)
    finally:
        os.close(fd)
