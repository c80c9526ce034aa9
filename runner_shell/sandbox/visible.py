"""What of the host's file system a sandboxed process sees: the system's programs, nothing else.

Only `/usr`, `/bin`, `/sbin`, the `/lib*` directories and `/etc` are listed (a merged-/usr
host's `/bin -> usr/bin` stays a symlink), read-only, and in `/etc` every file known to hold a
secret is masked (docs/sandbox.md lists them). Every home directory, `/var`, `/srv`, `/opt`,
`/mnt`, `/media`, `/run` and the host's `/tmp` are simply not there; what a program needs
beyond this (its own directory, the runner's interpreter, `[sandbox] read_only`) its caller
binds by name. Read from the host once per runner process.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import attrs

# The directories programs run from; each one the host has is listed, as a directory or as
# the symlink it is.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files of /etc that hold secrets on some host: password hashes, sudo rules, host keys,
# credentials of package repositories, networks, VPNs and Kerberos. Masked by /dev/null.
SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/sudoers",
    "/etc/doas.conf",
    "/etc/apt/auth.conf",
    "/etc/krb5.keytab",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/mysql/debian.cnf",
    "/etc/machine-id",  # not a secret, but it names this host to whoever reads it
)
# Directories of /etc that hold secrets: each is masked by an empty read-only directory.
SECRET_DIRS = (
    "/etc/sudoers.d",
    "/etc/apt/auth.conf.d",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/letsencrypt",
    "/etc/wireguard",
    "/etc/openvpn",
    "/etc/NetworkManager/system-connections",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/docker",
    "/etc/containers/auth.json",
)
# The private half of each SSH host key: /etc/ssh/ssh_host_*_key.
SSH_HOST_KEYS = ("/etc/ssh", "ssh_host_", "_key")
# Where a symlink of /etc may point (the resolver's file under /run) and still be followed:
# only that one file is bound, never the directory it lies in.
FOLLOWED_LINKS = ("/etc/resolv.conf", "/etc/hosts", "/etc/localtime")


@attrs.frozen(slots=True)
class Mount:
    """One entry of the listed system: `kind` "ro-bind" (source at `path`), "symlink"
    (`path` -> source), "mask-file" (/dev/null over `path`) or "mask-dir" (empty, read-only)."""

    kind: str
    path: Path
    source: str = ""


@functools.cache
def system_mounts() -> tuple[Mount, ...]:
    """The host's system as every sandboxed process sees it, in mount order."""
    return listed_system(Path("/"))


def listed_system(root: Path) -> tuple[Mount, ...]:
    """`system_mounts` for a host whose `/` is `root` (tests give a directory)."""
    mounts: list[Mount] = []
    for name in SYSTEM_DIRS:
        host = root / name.lstrip("/")
        if host.is_symlink():
            mounts.append(Mount("symlink", Path(name), os.readlink(host)))
        elif host.is_dir():
            mounts.append(Mount("ro-bind", Path(name), str(host)))
    listed = [mount.path for mount in mounts if mount.kind == "ro-bind"]
    for name in FOLLOWED_LINKS:
        host = root / name.lstrip("/")
        target = _resolved(host)
        if host.is_symlink() and target is not None and target.is_file():
            if not target.is_relative_to(root):
                continue
            inside = Path("/") / target.relative_to(root)
            if not any(inside.is_relative_to(path) for path in listed):
                mounts.append(Mount("ro-bind", inside, str(target)))
    for name in SECRET_FILES:
        if _regular_or_link(root / name.lstrip("/")):
            mounts.append(Mount("mask-file", Path(name)))
    for name in SECRET_DIRS:
        host = root / name.lstrip("/")
        if host.is_dir() and not host.is_symlink():
            mounts.append(Mount("mask-dir", Path(name)))
        elif _regular_or_link(host):
            mounts.append(Mount("mask-file", Path(name)))
    directory, prefix, suffix = SSH_HOST_KEYS
    with_keys = root / directory.lstrip("/")
    if with_keys.is_dir():
        for entry in sorted(os.listdir(with_keys)):
            if entry.startswith(prefix) and entry.endswith(suffix):
                mounts.append(Mount("mask-file", Path(directory) / entry))
    return tuple(mounts)


def masked(mounts: tuple[Mount, ...]) -> tuple[Path, ...]:
    """The paths `mounts` mask, sorted: what `runner validate` and the docs name."""
    return tuple(sorted(mount.path for mount in mounts if mount.kind.startswith("mask-")))


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None


def _regular_or_link(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink()
    except OSError:
        return False
