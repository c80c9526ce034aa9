"""Which sandbox is in effect: `[sandbox] mode` against whether bubblewrap works here.

`auto` sandboxes when the probe worked and otherwise says in one line that the agent runs
unsandboxed; `bwrap` refuses to run without it, in one line; `off` never asks and says so. The
probe names why bubblewrap is not usable: not installed, or bwrap's own last line.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from runner_core.run.config import Config, SandboxConfig
from runner_core.run.sandbox_config import SandboxMode
from runner_shell.errors import UserFacingError
from runner_shell.sandbox import SandboxRefused, SandboxStatus, limits, probe, sandbox_status
from runner_shell.sandbox.cgroups import Bases, SandboxGroup
from runner_shell.sandbox.limits import Limits, describe
from runner_shell.sandbox.status import Probe

WORKS = Probe("/usr/bin/bwrap")
BROKEN = Probe(None, "setting up uid map: Permission denied")
UNSANDBOXED = (
    "runner: sandbox=off (bubblewrap not usable: setting up uid map: Permission denied); "
    "the agent runs unsandboxed"
)


def status(mode: SandboxMode, found: Probe) -> SandboxStatus:
    return sandbox_status(Config(sandbox=SandboxConfig(mode=mode)), lambda: found)


@pytest.mark.parametrize("mode", ["auto", "bwrap"])
def test_a_working_bubblewrap_sandboxes_without_a_notice(mode: SandboxMode) -> None:
    found = status(mode, WORKS)

    assert (found.mode, found.bwrap, found.notice, found.refusal) == (
        "bwrap",
        "/usr/bin/bwrap",
        None,
        None,
    )
    assert found.require() is found


def test_auto_without_a_working_bubblewrap_runs_unsandboxed_and_says_so_in_one_line() -> None:
    found = status("auto", BROKEN)

    assert (found.mode, found.notice, found.refusal) == ("off", UNSANDBOXED, None)
    assert found.require() is found
    assert found.confine(Path("/w"), Path("/h"), network=True) is None


def test_bwrap_without_a_working_bubblewrap_refuses_in_one_line() -> None:
    found = status("bwrap", BROKEN)

    with pytest.raises(SandboxRefused) as refused:
        found.require()

    assert isinstance(refused.value, UserFacingError)
    assert str(refused.value) == (
        'sandbox: [sandbox] mode = "bwrap" but bubblewrap is not usable: setting up uid map: '
        'Permission denied (install bubblewrap, or set mode = "auto" in '
        ".runner/state/config.toml)"
    )


def test_off_never_probes_and_chosen_off_is_not_announced() -> None:
    def must_not_probe() -> Probe:
        raise AssertionError("mode off probed bubblewrap")

    found = sandbox_status(Config(sandbox=SandboxConfig(mode="off")), must_not_probe)

    assert (found.mode, found.refusal) == ("off", None)
    assert found.notice is None


def test_the_probe_says_bubblewrap_is_not_installed_when_it_is_not_on_the_path(
    tmp_path: Path,
) -> None:
    assert probe(search_path=str(tmp_path)) == Probe(
        None, "bwrap is not installed (Debian: apt-get install bubblewrap)"
    )


def test_the_probe_names_bwraps_own_reason_when_it_cannot_start(tmp_path: Path) -> None:
    # Stands in for a kernel without user namespaces: bwrap fails with its one-line reason.
    bwrap = tmp_path / "bwrap"
    bwrap.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
        encoding="utf-8",
    )
    bwrap.chmod(bwrap.stat().st_mode | stat.S_IXUSR)

    assert probe(search_path=str(tmp_path)) == Probe(None, "No permissions to create new namespace")


def test_the_probe_gives_up_at_its_deadline(tmp_path: Path) -> None:
    bwrap = tmp_path / "bwrap"
    bwrap.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    bwrap.chmod(bwrap.stat().st_mode | stat.S_IXUSR)

    assert probe(search_path=str(tmp_path), timeout_secs=0.5) == Probe(
        None, "bwrap did not start within 0.5 s"
    )


def test_the_probe_finds_a_working_bubblewrap(usable_sandbox: SandboxStatus) -> None:
    assert probe() == Probe(usable_sandbox.bwrap)


LIMITS = Limits("/usr/bin/prlimit", 64 * 2**20, 32, 2**20)
GROUPS = Path("/sys/fs/cgroup/runner")


@pytest.mark.parametrize(
    ("bases", "root", "said"),
    [
        (Bases(GROUPS, GROUPS, v2=True), True, "cgroup"),
        (Bases(), False, "rlimit"),
        (Bases(GROUPS, None), True, "cgroup-pids,rlimit-memory"),
        (Bases(), True, "no-pids,rlimit-memory"),
        (Bases(None, GROUPS), False, "rlimit-pids,cgroup-memory"),
    ],
)
def test_validate_says_which_mechanism_holds_pids_and_memory(
    bases: Bases, root: bool, said: str
) -> None:
    assert describe(LIMITS, bases, root) == said
    assert describe(None, bases, root) == "none"


def test_the_limits_are_the_cgroups_once_bwrap_joins_it_else_each_processs() -> None:
    group = SandboxGroup(GROUPS / "a", GROUPS / "b")
    joined = LIMITS.prefix(group)
    alone = LIMITS.prefix(None)

    assert joined[:3] == ("/bin/sh", "-c", joined[2]) and "--data=unlimited" in joined
    assert joined[3:7] == (
        "/bin/sh",
        str(GROUPS / "a/cgroup.procs"),
        str(GROUPS / "b/cgroup.procs"),
        "--",
    )
    assert alone[0] == "/usr/bin/prlimit" and f"--data={64 * 2**20}" in alone
    assert "--nproc=32" in joined and "--nproc=32" in alone


def test_the_subreaper_stands_first_only_where_each_process_holds_the_memory() -> None:
    pids_only = SandboxGroup(GROUPS / "a", None)
    both = SandboxGroup(GROUPS / "a", GROUPS / "b")

    alone = LIMITS.prefix(None, peak_fd=7)
    joined = LIMITS.prefix(pids_only, peak_fd=7)

    program = str(Path(limits.__file__).with_name("subreaper.py"))
    reaper = (sys.executable, "-I", "-S", program, "7", str(os.getpid()))  # dies with this one
    assert alone[:6] == reaper and alone[6] == "/usr/bin/prlimit"
    assert joined[:6] == reaper and joined[6:8] == ("/bin/sh", "-c")
    assert LIMITS.prefix(both, peak_fd=7)[0] == "/bin/sh"
    assert LIMITS.prefix(None)[0] == "/usr/bin/prlimit"
