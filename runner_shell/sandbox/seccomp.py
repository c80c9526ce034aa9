"""The seccomp filter every sandboxed process runs under: what an agent never needs is refused.

Built once per runner process with libseccomp (through `pyseccomp`, a ctypes binding that a
pip install brings along; the library itself, libseccomp2, is part of every Debian and Ubuntu
system) and handed to bubblewrap as BPF (`--seccomp FD`), which loads it just before it starts
the command. The list follows Flatpak's (common/flatpak-run.c, setup_seccomp) and the Docker
default profile: everything not named is allowed, each named call fails with EPERM (ENOSYS for
the calls a C library falls back from), so a program that merely probes carries on. Another
architecture's system calls (32-bit x86 on a 64-bit host) are killed, the libseccomp default,
so they are no way around the list. docs/sandbox.md lists the calls and why.
"""

from __future__ import annotations

import errno
import functools
import os
import termios
from typing import Any

# Never needed by an agent or a test suite, each a way out of a sandbox or into the kernel.
REFUSED_CALLS = (
    # mounts: remounting / writable, unmounting what hides a path, the new mount API
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    # namespaces: joining the runner's network (nsenter), making new ones
    "setns",
    "unshare",
    # other processes' memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    # the kernel keyring (another session's keys), BPF programs, perf counters
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    # the kernel itself: new kernels, modules, reboot, swap, accounting, quotas, its log
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "quotactl",
    "lookup_dcookie",
    # file handles open any file of a mounted file system, whatever the mounts hide
    "open_by_handle_at",
    "name_to_handle_at",
    # the classic race-widening helper of kernel exploits
    "userfaultfd",
    # old and unused, historic sources of leaks
    "uselib",
    "modify_ldt",
    "vm86",
    "vm86old",
)
# clone3 passes its flags in memory a filter cannot read: refused with ENOSYS, so the C library
# falls back to clone, whose flags it can (Flatpak and Docker do the same).
FALLBACK_CALLS = ("clone3",)
# clone with any of these flags makes a namespace (CLONE_NEWTIME shares its bit with the exit
# signal in clone's flags, and unshare, which takes it, is refused whole).
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
# Typing into the terminal of whoever started the runner (TIOCSTI), or the console (TIOCLINUX).
REFUSED_IOCTLS = (termios.TIOCSTI, getattr(termios, "TIOCLINUX", 0x541C))


class SeccompUnavailable(Exception):
    """libseccomp (or its binding) is missing, or refused to build the filter."""


def filter_bpf() -> bytes:
    """The compiled filter, as bubblewrap reads it from `--seccomp FD`; SeccompUnavailable when
    it cannot be built here. The same bytes every call of one runner process."""
    built = _built()
    if isinstance(built, str):
        raise SeccompUnavailable(built)
    return built


@functools.cache
def _built() -> bytes | str:
    try:
        import pyseccomp  # type: ignore[import-untyped]
    except (ImportError, RuntimeError, OSError) as error:  # RuntimeError: no libseccomp
        return f"libseccomp is not usable ({error}; Debian: apt-get install libseccomp2)"
    try:
        return _compile(pyseccomp)
    except OSError as error:
        return f"libseccomp could not build the filter: {error.strerror or error}"


def _compile(sc: Any) -> bytes:
    refuse = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    for name in REFUSED_CALLS:
        _add(sc, rules, refuse, name)
    for name in FALLBACK_CALLS:
        _add(sc, rules, sc.ERRNO(errno.ENOSYS), name)
    # s390 swaps clone's first two arguments; every architecture this runs on has flags first.
    for flag in CLONE_NAMESPACE_FLAGS:
        _add(sc, rules, refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for request in REFUSED_IOCTLS:
        # Only the low 32 bits are the request: a caller may set the others (Flatpak's test).
        _add(sc, rules, refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    fd = os.memfd_create("runner-seccomp", os.MFD_CLOEXEC)
    with os.fdopen(fd, "w+b") as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _add(sc: Any, rules: Any, action: int, name: str, *args: Any) -> None:
    try:
        number = sc.resolve_syscall(sc.Arch.NATIVE, name)
    except (OSError, ValueError):
        return
    if number < 0:  # not a system call of this architecture (vm86 on x86-64, ...)
        return
    rules.add_rule(action, number, *args)
