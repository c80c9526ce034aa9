"""What of a host's file system the sandbox lists (runner_shell.sandbox.visible), on a fake root.

Only the system's directories, as directories or as the symlinks a merged-/usr host has; every
secret-bearing file and directory of /etc masked; a resolver file /etc links to under /run bound
alone; homes, /var, /opt, /srv, /tmp never listed.
"""

from __future__ import annotations

from pathlib import Path

from runner_shell.sandbox.visible import Mount, listed_system, masked, system_mounts


def host(root: Path) -> Path:
    for name in ("usr/bin", "usr/lib", "etc/ssh", "etc/sudoers.d", "etc/ssl/private", "run/x"):
        (root / name).mkdir(parents=True)
    for name in ("root", "home/me/.ssh", "var/lib", "opt/tool", "srv", "tmp"):
        (root / name).mkdir(parents=True)
    (root / "bin").symlink_to("usr/bin")
    (root / "lib").symlink_to("usr/lib")
    for name in ("etc/passwd", "etc/shadow", "etc/gshadow", "etc/sudoers", "run/x/resolv.conf"):
        (root / name).write_text("x", encoding="utf-8")
    for name in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_config"):
        (root / "etc/ssh" / name).write_text("x", encoding="utf-8")
    (root / "etc/resolv.conf").symlink_to(root / "run/x/resolv.conf")
    return root


def test_only_the_system_directories_are_listed_symlinks_as_symlinks(tmp_path: Path) -> None:
    root = host(tmp_path)

    mounts = listed_system(root)

    shown = {mount.path: mount for mount in mounts if mount.kind in ("ro-bind", "symlink")}
    assert shown[Path("/bin")] == Mount("symlink", Path("/bin"), "usr/bin")
    assert shown[Path("/lib")] == Mount("symlink", Path("/lib"), "usr/lib")
    assert shown[Path("/usr")] == Mount("ro-bind", Path("/usr"), str(root / "usr"))
    assert shown[Path("/etc")].kind == "ro-bind"
    for absent in ("/root", "/home", "/var", "/opt", "/srv", "/tmp"):
        assert not any(mount.path.is_relative_to(absent) for mount in mounts), absent


def test_the_secrets_of_etc_are_masked_and_public_keys_are_not(tmp_path: Path) -> None:
    mounts = listed_system(host(tmp_path))

    assert masked(mounts) == tuple(
        Path(name)
        for name in (
            "/etc/gshadow",
            "/etc/shadow",
            "/etc/ssh/ssh_host_ed25519_key",
            "/etc/ssl/private",
            "/etc/sudoers",
            "/etc/sudoers.d",
        )
    )
    kinds = {mount.path: mount.kind for mount in mounts}
    assert kinds[Path("/etc/sudoers.d")] == "mask-dir"
    assert kinds[Path("/etc/shadow")] == "mask-file"


def test_the_resolver_file_under_run_is_bound_alone(tmp_path: Path) -> None:
    root = host(tmp_path)

    mounts = listed_system(root)

    assert Mount("ro-bind", Path("/run/x/resolv.conf"), str(root / "run/x/resolv.conf")) in mounts
    assert not any(mount.path == Path("/run/x") for mount in mounts)


def test_this_host_lists_usr_and_etc_and_masks_its_shadow_file() -> None:
    mounts = system_mounts()

    assert {Path("/usr"), Path("/etc")} <= {mount.path for mount in mounts}
    if Path("/etc/shadow").exists():
        assert Path("/etc/shadow") in masked(mounts)
