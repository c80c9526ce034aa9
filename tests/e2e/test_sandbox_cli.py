"""End-to-end: what `runner` says about the sandbox, in each mode.

`validate` and `status` say `sandbox=bwrap|off` and each layer in force; `loop` and `step` say
in one stderr line at their start that the agent runs unsandboxed, when it does, and then run as
before; with
`[sandbox] mode = "bwrap"` and no working bubblewrap, they and `validate` refuse in one line.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.helpers.e2e import Project, assert_one_error_line, lines, node

DONE = {"status": "done", "summary": "Did it."}
OFF_LAYERS = "sandbox=off userns=no caps=host seccomp=no fs=host env=listed net=host limits=none"
BROKEN_NOTICE = (
    "runner: sandbox=off (bubblewrap not usable: No permissions to create new namespace); "
    "the agent runs unsandboxed"
)


def with_broken_bwrap(project: Project, tmp_path: Path) -> None:
    """A bwrap first on PATH that fails as it does where user namespaces are disabled."""
    bin_dir = tmp_path / "broken-bin"
    bin_dir.mkdir()
    bwrap = bin_dir / "bwrap"
    bwrap.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
        encoding="utf-8",
    )
    bwrap.chmod(bwrap.stat().st_mode | stat.S_IXUSR)
    project.env["PATH"] = f"{bin_dir}:{project.env['PATH']}"


def test_mode_off_is_what_validate_and_status_say(project: Project) -> None:
    project.prepare(node("root"), sandbox={"mode": "off"})

    validate = project.runner("validate")
    status = project.runner("status")
    document = json.loads(project.runner("status", "--json").stdout)

    assert validate.returncode == 0, validate.stderr
    assert lines(validate.stdout)[-1] == f"validate: {OFF_LAYERS}"
    assert validate.stderr == ""
    assert f"status: {OFF_LAYERS}" in lines(status.stdout)
    assert document["sandbox"] == "off"
    assert document["sandbox_layers"]["env"] == "listed"  # the allow-list holds unsandboxed too
    assert document["sandbox_layers"]["net"] == "host"


def test_loop_in_mode_off_runs_unsandboxed_without_a_notice(project: Project) -> None:
    run = project.prepare(node("root"), sandbox={"mode": "off"})
    project.agent_script({1: {"output": DONE}})

    result = project.runner("loop")

    assert result.returncode == 0, result.stderr
    assert lines(result.stderr) == []
    assert (
        lines(result.stdout)[0] == f"loop: step run={run} iter=1 node=root status=done guard=pass"
    )


def test_step_in_mode_auto_without_a_working_bubblewrap_names_why(
    project: Project, tmp_path: Path
) -> None:
    run = project.prepare(node("root"), sandbox={"mode": "auto"})
    project.agent_script({1: {"output": DONE}})
    with_broken_bwrap(project, tmp_path)

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stderr) == [BROKEN_NOTICE]
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=pass"]
    assert f"status: {OFF_LAYERS}" in lines(project.runner("status").stdout)


@pytest.mark.parametrize("command", ["loop", "step", "validate"])
def test_mode_bwrap_without_a_working_bubblewrap_refuses_in_one_line(
    project: Project, tmp_path: Path, command: str
) -> None:
    project.prepare(node("root"), sandbox={"mode": "bwrap"})
    project.agent_script({1: {"output": DONE}})
    with_broken_bwrap(project, tmp_path)
    head = project.head

    result = project.runner(command)

    assert assert_one_error_line(result) == (
        'sandbox: [sandbox] mode = "bwrap" but bubblewrap is not usable: No permissions to '
        'create new namespace (install bubblewrap, or set mode = "auto" in '
        ".runner/state/config.toml)"
    )
    assert project.head == head
    assert not project.iter_dir(1).exists()
