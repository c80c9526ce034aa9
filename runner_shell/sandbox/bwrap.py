"""The bubblewrap command line of one sandboxed process, and the launch that keeps it private.

`bwrap_options` is pure: the same confinement and environment give the same options. The
process gets its own user namespace (an unprivileged uid inside, no capabilities, no nested
user namespaces), its own PID, IPC, UTS and cgroup namespaces, and sees only what is listed:
the system's directories read-only (runner_shell.sandbox.visible), a fresh /dev and /proc, a
private /tmp, and the binds its caller names. The order matters to bwrap (a mount covers
whatever was mounted inside its path before it): the system first, then every other mount outer
path first, so a work directory under a hidden repository is still there.

`launch` hands the options to bwrap through a memory file rather than its command line, where
every user of the machine could read the environment's secrets in /proc, and the seccomp
filter (runner_shell.sandbox.seccomp) through another.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from runner_shell.sandbox.cgroups import (
    SandboxGroup,
    give_up_unless_owned,
    owned_by,
    sandbox_group,
)
from runner_shell.sandbox.limits import Limits, pids_hold
from runner_shell.sandbox.proxy import BRIDGE_PATH, BRIDGE_SOURCE, PROXY_SOCKET, proxy_env
from runner_shell.sandbox.reaping import running
from runner_shell.sandbox.seccomp import filter_bpf
from runner_shell.sandbox.seen_at import CHECKOUT, ITERATION, SANDBOX_HOME
from runner_shell.sandbox.visible import Mount
from runner_shell.sandbox.watch import LimitWatch, checkout_blocks

# Who a sandboxed process is when the runner is root: an unprivileged user inside its own user
# namespace, mapped to root outside, so what it writes in the checkout is still the operator's.
ROOT_SANDBOX_IDS = (1000, 1000)


def sandbox_ids() -> tuple[int, int]:
    """The uid and gid a sandboxed process has inside: the caller's own, or ROOT_SANDBOX_IDS
    for root (uid 0 inside is what programs test to decide they may do anything)."""
    uid, gid = os.getuid(), os.getgid()
    return ROOT_SANDBOX_IDS if uid == 0 else (uid, gid)


@attrs.frozen(slots=True)
class Confinement:
    """What one sandboxed process sees, writes and reaches.

    Every path is absolute and resolved (no symlinks). The checkout is seen at CHECKOUT, the
    private HOME at SANDBOX_HOME and the `output` directory at ITERATION; every other path is
    bound at its own path. `inside` says where a host path is seen, and the environment and
    argv a process gets name what it sees (`seen_text`).
    """

    bwrap: str  # the bubblewrap program, as the probe found it
    work_dir: Path  # the one writable checkout; the process starts here
    home: Path  # a private HOME the runner made; writable, becomes $HOME's directory
    writable: tuple[Path, ...] = ()  # writable at their own paths, e.g. `[sandbox] writable`
    read_only: tuple[Path, ...] = ()  # e.g. the output schema inside a hidden repository
    hidden_dirs: tuple[Path, ...] = ()  # an empty read-only tmpfs, e.g. the run's repository
    hidden_files: tuple[Path, ...] = ()  # replaced by /dev/null, e.g. a daemon's socket
    network: bool = False  # False: only a loopback of its own, no route anywhere
    system: tuple[Mount, ...] = ()  # the host's system, as listed (visible.system_mounts)
    ids: tuple[int, int] = ROOT_SANDBOX_IDS  # uid and gid inside its user namespace
    seccomp: bool = False  # whether the filter is loaded (only where it can be built)
    tmp_bytes: int | None = None  # the private /tmp's size; None: the kernel's default
    limits: Limits | None = None  # memory, processes and file sizes; None: unlimited
    # The egress proxy's Unix socket (runner_shell.sandbox.proxy): with network False, the one
    # way out; the argv must then be started by the bridge (`proxy.bridged_argv`).
    proxy_socket: Path | None = None
    # Whether the work directory's growth is held to `disk_mb` (not for `[sandbox] setup`,
    # whose output is the operator's).
    disk_watched: bool = True
    # The directory it writes its output to (the agent's `<iter>/agent/`, the guard's report's),
    # seen at ITERATION; None: there is none.
    output: Path | None = None

    def __attrs_post_init__(self) -> None:
        paths = (
            self.work_dir,
            self.home,
            *(() if self.output is None else (self.output,)),
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
        seen = [at for _, at in self.moved()]
        for path in (*self.writable, *self.read_only):
            if self.inside(path) == path and _inside(path, seen):
                raise ValueError(
                    f"{path} cannot be bound in the sandbox: it lies where the sandbox shows "
                    f"its own {', '.join(map(str, seen))} (move it elsewhere)"
                )

    def moved(self) -> tuple[tuple[Path, Path], ...]:
        """Each bind seen elsewhere than at its own path: (its host path, where it is seen)."""
        output = () if self.output is None else ((self.output, ITERATION),)
        return ((self.work_dir, CHECKOUT), (self.home, SANDBOX_HOME), *output)

    def inside(self, path: Path) -> Path:
        """Where the process sees the host's `path`: in a moved bind, under where that is seen
        (the nearest bind holding it wins); anywhere else, at its own path."""
        for host, seen in sorted(self.moved(), key=lambda pair: len(pair[0].parts), reverse=True):
            if path.is_relative_to(host):
                return seen / path.relative_to(host)
        return path

    def seen_text(self, text: str) -> str:
        """`text` (an environment value, an argument) with each moved bind's host path, where it
        stands as a whole path, written as the path the process sees it at."""
        return seen_paths(text, {str(host): str(seen) for host, seen in self.moved()})


def seen_paths(text: str, places: Mapping[str, str]) -> str:
    """`text` with each key of `places` (an absolute path) written as its value where it
    stands as a whole path: followed by its end, `/`, `:` (a PATH-like list) or a quote or
    blank, never inside a longer name (`/slots/1` stays in `/slots/10`)."""
    found = sorted((path for path in places if path in text), key=len, reverse=True)
    if not found:
        return text
    alternatives = "|".join(re.escape(path) for path in found)
    pattern = f"(?<![\\w.-])(?:{alternatives})(?![^/\\s:'\"),;\\]])"
    return re.sub(pattern, lambda match: places[match.group(0)], text)


def bwrap_options(
    confinement: Confinement, env: Mapping[str, str], seccomp_fd: int | None = None
) -> tuple[str, ...]:
    """bwrap's options (everything before `--` and the command) for `confinement`.

    The process gets exactly `env` (bwrap adds only PWD), each path in it written as the
    process sees it (`Confinement.seen_text`), starts in CHECKOUT, has its own user namespace
    and every other one bwrap makes, a new session (no terminal to inject keystrokes into)
    and dies with its bwrap, taking every process it started along: a PID namespace ends with
    its first process. `seccomp_fd` is the descriptor bwrap reads the filter from, when there
    is one.
    """
    options = namespace_options(confinement)
    system = [mount for mount in confinement.system if not mount.kind.startswith("mask-")]
    for mount in system:
        if mount.kind == "symlink":
            options += ["--symlink", mount.source, str(mount.path)]
        else:
            options += ["--ro-bind", mount.source, str(mount.path)]
    options += ["--dev", "/dev", "--proc", "/proc"]
    masks = [mount for mount in confinement.system if mount.kind.startswith("mask-")]
    for mount in masks:
        if mount.kind == "mask-file":
            options += ["--ro-bind", "/dev/null", str(mount.path)]
        else:
            options += ["--tmpfs", str(mount.path), "--remount-ro", str(mount.path)]
    hidden_dirs, mounts = _mounts(confinement, system)
    # A mount covers what was mounted inside its path before it: outer paths go first.
    for path, kind in sorted(mounts, key=lambda mount: len(mount[0].parts)):
        options += [*kind, str(path)]
    # Read-only only now: the binds under a hidden directory needed their mount points made,
    # and so did every bind under / (the directories bwrap made for them stay unwritable).
    for directory in hidden_dirs:
        options += ["--remount-ro", str(directory)]
    options += ["--remount-ro", "/"]
    options += ["--die-with-parent", "--new-session", "--chdir", str(CHECKOUT)]
    if seccomp_fd is not None:
        options += ["--seccomp", str(seccomp_fd)]
    options.append("--clearenv")
    for name, value in sorted(env.items()):
        options += ["--setenv", name, confinement.seen_text(value)]
    options += egress_options(confinement.proxy_socket)
    return tuple(options)


def _mounts(
    confinement: Confinement, system: Sequence[Mount]
) -> tuple[tuple[Path, ...], list[tuple[Path, tuple[str, ...]]]]:
    """The hidden directories bound, and every mount after the system's: where it is seen
    inside and its bwrap option (the path its option names)."""
    listed = [mount.path for mount in system if mount.kind == "ro-bind"]
    writable = confinement.writable
    read_only = tuple(path for path in confinement.read_only if not _inside(path, listed))
    # A hidden path matters only where something bound at its own path would show it, or
    # under the private /tmp (which would hold writable copies of its mount points); elsewhere,
    # and where the sandbox shows a moved bind, it is absent. A bind inside a moved one (what
    # `[sandbox] setup` made, in the checkout) is seen inside it.
    inside = confinement.inside
    own = [path for path in (*read_only, *writable) if inside(path) == path]
    shown = (*listed, *own, Path("/tmp"))
    moved = confinement.moved()
    seen = [at for _, at in moved]

    def hidden(path: Path) -> bool:
        return _inside(path, shown) and not _inside(path, seen)

    hidden_dirs = tuple(path for path in confinement.hidden_dirs if hidden(path))
    hidden_files = tuple(path for path in confinement.hidden_files if hidden(path))
    tmp_size = () if confinement.tmp_bytes is None else ("--size", str(confinement.tmp_bytes))
    mounts = [
        (Path("/tmp"), (*tmp_size, "--tmpfs")),
        *((path, ("--tmpfs",)) for path in hidden_dirs),
        *((path, ("--ro-bind", "/dev/null")) for path in hidden_files),
        *((inside(path), ("--ro-bind", str(path))) for path in read_only),
        *((inside(path), ("--bind", str(path))) for path in writable),
        *((at, ("--bind", str(host))) for host, at in moved),
    ]
    return hidden_dirs, mounts


def namespace_options(confinement: Confinement) -> list[str]:
    """Its own user namespace (an unprivileged uid inside, no capabilities, no nested user
    namespaces) and every other namespace bwrap makes; the network's unless it keeps the host's."""
    uid, gid = confinement.ids
    options: list[str] = ["--unshare-user", "--uid", str(uid), "--gid", str(gid)]
    options += ["--disable-userns", "--cap-drop", "ALL"]
    options += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup"]
    if not confinement.network:
        options.append("--unshare-net")
    return options


def _inside(path: Path, directories: Sequence[Path]) -> bool:
    """Whether `path` is one of `directories` or lies in one."""
    return any(path.is_relative_to(directory) for directory in directories)


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


@attrs.frozen(slots=True)
class Launch:
    """What starts a command in the sandbox: the argv, the descriptors it must inherit
    (`pass_fds`), the cgroup it joins, if any, and its /tmp's size (docs/sandbox.md)."""

    argv: tuple[str, ...]
    fds: tuple[int, ...]
    group: SandboxGroup | None
    tmp_bytes: int | None = None
    nproc: int | None = None  # RLIMIT_NPROC, where it holds the processes
    data_bytes: int | None = None  # RLIMIT_DATA, where no memory cgroup holds memory_mb
    # The checkout, how much it may grow, and its size before the process starts.
    disk: tuple[Path, int, int] | None = None
    # Where the subreaper reports the sandbox's peak (runner_shell.sandbox.subreaper), when
    # it stands in front of bwrap (where no memory cgroup holds memory_mb).
    peak_fd: int | None = None

    def started(self, process: subprocess.Popen[bytes]) -> LimitWatch:
        """`process` was started from this launch: its cgroup goes once it has ended. The
        watch of its limits, its /tmp opened once the command inside has started."""
        if self.group is not None:
            owned_by(self.group, process)
        peak = None if self.peak_fd is None else os.dup(self.peak_fd)
        watch = LimitWatch(
            process.pid, self.group, self.tmp_bytes, self.nproc, self.data_bytes, self.disk, peak
        )
        watch.attach(lambda: running(process.pid))
        return watch


@contextlib.contextmanager
def launch(
    confinement: Confinement, argv: Sequence[str], env: Mapping[str, str]
) -> Iterator[Launch]:
    """How to start `argv` in the sandbox (each path in it written as the process sees it),
    valid inside the block: its descriptors close on leaving, and its cgroup goes then too
    unless a process still running was `started` from it.
    """
    fds: list[int] = []
    kept: list[int] = []  # descriptors of the runner's only
    group = None
    try:
        seccomp_fd = None
        if confinement.seccomp:
            seccomp_fd = _memory_file("runner-seccomp", filter_bpf())
            fds.append(seccomp_fd)
        options = bwrap_options(confinement, env, seccomp_fd)
        fd = _memory_file(
            "runner-bwrap-args", b"".join(os.fsencode(option) + b"\0" for option in options)
        )
        fds.append(fd)
        limits = confinement.limits
        group = None if limits is None else sandbox_group(limits.pids, limits.memory_bytes)
        data = peak_write = None
        if limits is not None and (group is None or group.memory is None):
            data = limits.memory_bytes
            peak_read, peak_write = os.pipe()  # the subreaper's report of the sandbox's peak
            kept.append(peak_read)
            fds.append(peak_write)
        prefix = () if limits is None else limits.prefix(group, peak_write)
        seen = tuple(map(confinement.seen_text, argv))  # a path in it names what it sees
        argv = (*prefix, confinement.bwrap, "--args", str(fd), "--", *seen)
        nproc = limits.pids if limits is not None and pids_hold() else None
        watched = limits is not None and confinement.disk_watched
        disk = None
        if watched and limits is not None:
            work_dir = confinement.work_dir
            disk = (work_dir, limits.file_bytes, checkout_blocks(work_dir))
        peak = kept[0] if kept else None
        yield Launch(argv, tuple(fds), group, confinement.tmp_bytes, nproc, data, disk, peak)
    finally:
        for fd in fds + kept:
            os.close(fd)
        if group is not None:
            give_up_unless_owned(group)


def _memory_file(name: str, payload: bytes) -> int:
    """A memory file holding `payload`, read from its start by whoever inherits it."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
