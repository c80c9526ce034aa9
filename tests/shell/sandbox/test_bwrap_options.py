"""How one process is confined, as bubblewrap's options (pure; no bubblewrap needed).

The system is read-only with fresh /dev and /proc and a private /tmp; hidden directories are
empty and read-only; the work directory, the writable binds and the private HOME are the only
writable places; every mount lands after the mounts of its parent paths; the process gets its
own PID, IPC and UTS namespaces, a new session, no network unless allowed, and exactly the
environment given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.sandbox import Confinement, bwrap_options

WORK = Path("/tmp/slots/1")
HOME = Path("/var/lib/runner/home")


def confinement(**changes: object) -> Confinement:
    fields: dict[str, object] = {"bwrap": "/usr/bin/bwrap", "work_dir": WORK, "home": HOME}
    fields.update(changes)
    return Confinement(**fields)  # type: ignore[arg-type]


def pairs(options: tuple[str, ...], flag: str) -> list[str]:
    """The argument after each occurrence of `flag`."""
    return [options[index + 1] for index, option in enumerate(options) if option == flag]


def test_the_system_is_read_only_with_fresh_dev_proc_and_a_private_tmp() -> None:
    options = bwrap_options(confinement(), {})

    assert options[:7] == ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
    assert "/tmp" in pairs(options, "--tmpfs")


def test_only_the_work_dir_the_writable_binds_and_home_are_bound_writable() -> None:
    iteration = Path("/repo/.runner/iterations/run/3")
    options = bwrap_options(confinement(writable=(iteration,)), {})

    assert sorted(pairs(options, "--bind")) == sorted([str(WORK), str(iteration), str(HOME)])


def test_a_hidden_directory_is_an_empty_tmpfs_made_read_only_after_every_mount() -> None:
    options = bwrap_options(confinement(hidden_dirs=(Path("/repo"),)), {})

    assert "/repo" in pairs(options, "--tmpfs")
    assert pairs(options, "--remount-ro") == ["/repo"]
    last_mount = max(i for i, option in enumerate(options) if option in ("--bind", "--ro-bind"))
    assert options.index("--remount-ro") > last_mount


def test_a_hidden_file_is_covered_by_dev_null() -> None:
    options = bwrap_options(confinement(hidden_files=(Path("/run/docker.sock"),)), {})

    index = options.index("/run/docker.sock")
    assert options[index - 2 : index + 1] == ("--ro-bind", "/dev/null", "/run/docker.sock")


def test_a_mount_inside_another_comes_after_it_whatever_order_it_was_given_in() -> None:
    repo = Path("/tmp/repo")
    iteration = repo / ".runner" / "iterations" / "run" / "3"
    schema = repo / ".runner" / "state" / "schema.json"
    options = bwrap_options(
        confinement(writable=(iteration,), read_only=(schema,), hidden_dirs=(repo,)), {}
    )

    tmp, hidden = options.index("/tmp"), options.index(str(repo))
    assert tmp < hidden < options.index(str(iteration))
    assert hidden < options.index(str(schema))
    assert tmp < options.index(str(WORK))


@pytest.mark.parametrize(
    ("network", "unshared"), [(False, True), (True, False)], ids=["no-network", "network"]
)
def test_the_network_is_unshared_unless_allowed(network: bool, unshared: bool) -> None:
    options = bwrap_options(confinement(network=network), {})

    assert ("--unshare-net" in options) is unshared


def test_the_process_gets_its_own_namespaces_dies_with_bwrap_and_starts_in_the_work_dir() -> None:
    options = bwrap_options(confinement(), {})

    for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in options
    assert "--new-session" in options
    assert pairs(options, "--chdir") == [str(WORK)]


def test_the_environment_is_exactly_the_one_given_in_sorted_order() -> None:
    options = bwrap_options(confinement(), {"PATH": "/usr/bin", "HOME": str(HOME), "A": "x y"})

    start = options.index("--clearenv")
    assert options[start + 1 :] == (
        *("--setenv", "A", "x y"),
        *("--setenv", "HOME", str(HOME)),
        *("--setenv", "PATH", "/usr/bin"),
    )


def test_the_same_confinement_gives_the_same_options() -> None:
    env = {"B": "2", "A": "1"}
    first = confinement(writable=(Path("/a"), Path("/b/c")), hidden_dirs=(Path("/b"),))
    second = confinement(writable=(Path("/a"), Path("/b/c")), hidden_dirs=(Path("/b"),))

    assert bwrap_options(first, env) == bwrap_options(second, dict(sorted(env.items())))


def test_a_relative_path_is_refused() -> None:
    with pytest.raises(ValueError, match="sandbox paths must be absolute, got 'slot'"):
        confinement(work_dir=Path("slot"))
