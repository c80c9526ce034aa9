"""How one process is confined, as bubblewrap's options (pure; no bubblewrap needed).

Only the listed system is there, read-only, with fresh /dev and /proc and a private /tmp, and /
itself read-only; hidden directories are empty and read-only where something bound would show
them; the work directory, the writable binds and the private HOME are the only writable places;
every mount lands after the mounts of its parent paths; the process gets its own user (an
unprivileged uid, no capabilities, no nested user namespaces), PID, IPC, UTS and cgroup
namespaces, a new session, no network unless allowed, and exactly the environment given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.sandbox import Confinement, bwrap_options
from runner_shell.sandbox.visible import Mount

WORK = Path("/tmp/slots/1")
HOME = Path("/var/lib/runner/home")


def confinement(**changes: object) -> Confinement:
    fields: dict[str, object] = {"bwrap": "/usr/bin/bwrap", "work_dir": WORK, "home": HOME}
    fields.update(changes)
    return Confinement(**fields)  # type: ignore[arg-type]


def pairs(options: tuple[str, ...], flag: str) -> list[str]:
    """The argument after each occurrence of `flag`."""
    return [options[index + 1] for index, option in enumerate(options) if option == flag]


SYSTEM = (
    Mount("ro-bind", Path("/usr"), "/usr"),
    Mount("symlink", Path("/bin"), "usr/bin"),
    Mount("ro-bind", Path("/etc"), "/etc"),
    Mount("mask-file", Path("/etc/shadow")),
    Mount("mask-dir", Path("/etc/ssl/private")),
)


def test_only_the_listed_system_is_there_read_only_with_fresh_dev_proc_and_a_private_tmp() -> None:
    options = bwrap_options(confinement(system=SYSTEM), {})

    assert ("--ro-bind", "/", "/") not in zip(options, options[1:], options[2:], strict=False)
    assert pairs(options, "--ro-bind")[:2] == ["/usr", "/etc"]
    index = options.index("--symlink")
    assert options[index : index + 3] == ("--symlink", "usr/bin", "/bin")
    assert "/tmp" in pairs(options, "--tmpfs")
    assert options[options.index("--dev") : options.index("--dev") + 4] == (
        *("--dev", "/dev", "--proc", "/proc"),
    )
    assert pairs(options, "--remount-ro")[-1] == "/"


def test_the_secrets_of_etc_are_masked_after_etc_is_bound() -> None:
    options = bwrap_options(confinement(system=SYSTEM), {})

    shadow = options.index("/etc/shadow")
    assert options[shadow - 2 : shadow + 1] == ("--ro-bind", "/dev/null", "/etc/shadow")
    assert options.index("/etc") < shadow
    assert "/etc/ssl/private" in pairs(options, "--tmpfs")
    assert "/etc/ssl/private" in pairs(options, "--remount-ro")


def test_its_own_user_namespace_with_an_unprivileged_uid_no_capabilities_nor_nesting() -> None:
    options = bwrap_options(confinement(ids=(1000, 1000)), {})

    assert options[:5] == ("--unshare-user", "--uid", "1000", "--gid", "1000")
    assert "--disable-userns" in options
    assert pairs(options, "--cap-drop") == ["ALL"]
    assert "--unshare-cgroup" in options


def test_the_seccomp_filter_is_read_from_the_descriptor_given() -> None:
    assert "--seccomp" not in bwrap_options(confinement(), {})
    assert pairs(bwrap_options(confinement(), {}, seccomp_fd=7), "--seccomp") == ["7"]


def test_the_private_tmp_has_the_size_asked_for() -> None:
    options = bwrap_options(confinement(tmp_bytes=1 << 20), {})

    tmp = options.index("/tmp")
    assert options[tmp - 3 : tmp + 1] == ("--size", str(1 << 20), "--tmpfs", "/tmp")


def test_only_the_work_dir_the_writable_binds_and_home_are_bound_writable() -> None:
    iteration = Path("/repo/.runner/iterations/run/3")
    options = bwrap_options(confinement(writable=(iteration,)), {})

    assert sorted(pairs(options, "--bind")) == sorted([str(WORK), str(iteration), str(HOME)])


def test_a_hidden_directory_nothing_shows_is_absent_not_covered() -> None:
    iteration = Path("/repo/.runner/iterations/run/3")
    options = bwrap_options(confinement(writable=(iteration,), hidden_dirs=(Path("/repo"),)), {})

    assert "/repo" not in options
    assert str(iteration) in pairs(options, "--bind")


def test_a_hidden_directory_a_bind_would_show_is_an_empty_tmpfs_made_read_only_after_it() -> None:
    shown = Path("/srv/projects")
    options = bwrap_options(confinement(read_only=(shown,), hidden_dirs=(shown / "repo",)), {})

    assert "/srv/projects/repo" in pairs(options, "--tmpfs")
    assert pairs(options, "--remount-ro")[0] == "/srv/projects/repo"
    last_mount = max(i for i, option in enumerate(options) if option in ("--bind", "--ro-bind"))
    assert options.index("--remount-ro") > last_mount


def test_a_hidden_file_a_bind_would_show_is_covered_by_dev_null() -> None:
    options = bwrap_options(
        confinement(
            read_only=(Path("/run"),),
            hidden_files=(Path("/run/docker.sock"), Path("/var/run/other.sock")),
        ),
        {},
    )

    index = options.index("/run/docker.sock")
    assert options[index - 2 : index + 1] == ("--ro-bind", "/dev/null", "/run/docker.sock")
    assert "/var/run/other.sock" not in options


def test_a_mount_inside_another_comes_after_it_whatever_order_it_was_given_in() -> None:
    repo = Path("/tmp/repo")
    iteration = repo / ".runner" / "iterations" / "run" / "3"
    schema = repo / ".runner" / "state" / "schema.json"
    options = bwrap_options(
        confinement(writable=(iteration,), read_only=(schema,), hidden_dirs=(repo,)), {}
    )

    tmp, hidden = options.index("/tmp"), options.index(str(repo))  # under /tmp: covered
    assert tmp < hidden < options.index(str(iteration))
    assert hidden < options.index(str(schema))
    assert tmp < options.index(str(WORK))


@pytest.mark.parametrize(
    ("network", "unshared"), [(False, True), (True, False)], ids=["no-network", "network"]
)
def test_the_network_is_unshared_unless_allowed(network: bool, unshared: bool) -> None:
    options = bwrap_options(confinement(network=network), {})

    assert ("--unshare-net" in options) is unshared


def test_the_process_gets_its_own_namespaces_dies_with_bwrap_and_starts_in_the_checkout() -> None:
    options = bwrap_options(confinement(), {})

    for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in options
    assert "--new-session" in options
    assert pairs(options, "--chdir") == ["/checkout"]


def test_the_environment_is_exactly_the_one_given_in_sorted_order() -> None:
    options = bwrap_options(confinement(), {"PATH": "/usr/bin", "HOME": str(HOME), "A": "x y"})

    start = options.index("--clearenv")
    assert options[start + 1 :] == (
        *("--setenv", "A", "x y"),
        *("--setenv", "HOME", "/sandbox-home"),  # the private HOME, where the process sees it
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


ITERATION = Path("/repo/.git/runner/runs/r/iterations/3/agent")


def bound_at(options: tuple[str, ...], flag: str, inside: str) -> list[str]:
    """The host paths bound by `flag` at `inside`."""
    return [
        options[index + 1]
        for index, option in enumerate(options[:-2])
        if option == flag and options[index + 2] == inside
    ]


def test_the_checkout_home_and_output_are_seen_at_fixed_paths_never_their_own() -> None:
    options = bwrap_options(confinement(output=ITERATION), {})

    assert bound_at(options, "--bind", "/checkout") == [str(WORK)]
    assert bound_at(options, "--bind", "/iteration") == [str(ITERATION)]
    assert bound_at(options, "--bind", "/sandbox-home") == [str(HOME)]
    for host in (WORK, ITERATION, HOME):  # bound from, never at
        assert bound_at(options, "--bind", str(host)) == []
        assert str(host) not in pairs(options, "--tmpfs")


def test_every_path_of_a_moved_bind_in_the_environment_names_where_it_is_seen() -> None:
    env = {
        "RUNNER_OUTPUT_PATH": str(ITERATION / "agent_output.json"),
        "RUNNER_AGENT_DIR": str(ITERATION),
        "PATH": f"{WORK}/node_modules/.bin:/usr/bin",
        "OTHER_SLOT": "/tmp/slots/10/x",  # another slot's path is not this one's
        "ELSEWHERE": f"/mnt{WORK}",  # nor one that only ends like it
        "RUNNER_ITER_DIR": str(ITERATION.parent),  # not bound: left as it is
        "LINE": f"cd '{WORK}' && ls {WORK}/src",
    }

    options = bwrap_options(confinement(output=ITERATION), env)

    setenv = [index for index, option in enumerate(options) if option == "--setenv"]
    assert {options[index + 1]: options[index + 2] for index in setenv} == {
        "RUNNER_OUTPUT_PATH": "/iteration/agent_output.json",
        "RUNNER_AGENT_DIR": "/iteration",
        "PATH": "/checkout/node_modules/.bin:/usr/bin",
        "OTHER_SLOT": "/tmp/slots/10/x",
        "ELSEWHERE": f"/mnt{WORK}",
        "RUNNER_ITER_DIR": str(ITERATION.parent),
        "LINE": "cd '/checkout' && ls /checkout/src",
    }


def test_a_path_is_seen_under_the_bind_that_holds_it() -> None:
    held = confinement(output=ITERATION)

    assert held.inside(WORK / "test" / "a.test.js") == Path("/checkout/test/a.test.js")
    assert held.inside(ITERATION / "report.xml") == Path("/iteration/report.xml")
    assert held.inside(Path("/usr/bin/node")) == Path("/usr/bin/node")
    assert held.inside(Path("/tmp/slots/10")) == Path("/tmp/slots/10")


def test_a_hidden_directory_where_the_checkout_is_seen_is_not_covered() -> None:
    # The user's own repository at /checkout: the sandbox shows the slot there, not a tmpfs.
    options = bwrap_options(
        confinement(read_only=(Path("/srv"),), hidden_dirs=(Path("/checkout"), Path("/srv/r"))), {}
    )

    assert pairs(options, "--tmpfs").count("/checkout") == 0
    assert "/checkout" not in pairs(options, "--remount-ro")
    assert "/srv/r" in pairs(options, "--tmpfs")


def test_a_bind_where_the_sandbox_shows_its_own_is_refused() -> None:
    with pytest.raises(ValueError, match=r"/checkout/\.venv cannot be bound in the sandbox"):
        confinement(read_only=(Path("/checkout/.venv"),))


def test_the_command_names_the_paths_it_sees() -> None:
    from runner_shell.sandbox.bwrap import launch

    argv = [f"{WORK}/node_modules/.bin/jest", f"--outputFile={ITERATION}/r.xml", "/usr/bin/x"]
    with launch(confinement(output=ITERATION), argv, {}) as started:
        command = started.argv[started.argv.index("--") + 1 :]

    assert command == (
        *("/checkout/node_modules/.bin/jest", "--outputFile=/iteration/r.xml", "/usr/bin/x"),
    )


def test_a_read_only_path_in_the_checkout_is_seen_read_only_in_it() -> None:
    # What `[sandbox] setup` made: read-only where the process sees it, under /checkout.
    options = bwrap_options(confinement(read_only=(WORK / ".venv",)), {})

    assert bound_at(options, "--ro-bind", "/checkout/.venv") == [str(WORK / ".venv")]
    assert options.index("/checkout/.venv") > options.index("/checkout")
