"""End-to-end: the agent and the guard get an environment by allow-list (docs/sandbox.md, row 4).

The operator's cloud keys and tokens never reach an agent or a guard, sandboxed or not
(`mode = "off"`: the allow-list is the rule, the sandbox how it is enforced); what
`[sandbox] env` names reaches the agent, what `[guard] env` names reaches the guard, and a
guard never gets the backend's API key. Each process checks its own environment and fails the
step if it sees what it must not.
"""

from __future__ import annotations

import pytest

from tests.helpers.e2e import Project, lines, node

pytestmark = pytest.mark.escape

WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
SECRETS = {
    "CLOUD_SECRET_TOKEN": "s3cr3t",
    "AWS_SECRET_ACCESS_KEY": "aws-key",
    "GITHUB_TOKEN": "ghp-token",
    "OPENAI_API_KEY": "sk-openai",
}


def absent(*names: str) -> str:
    """Shell that exits 7 when any of `names` is set."""
    return "".join(
        f'[ -z "${{{name}+x}}" ] || {{ echo "{name} leaked" >&2; exit 7; }}\n' for name in names
    )


def present(*names: str) -> str:
    return "".join(
        f'[ -n "${{{name}+x}}" ] || {{ echo "{name} missing" >&2; exit 8; }}\n' for name in names
    )


def prepare(
    project: Project, agent: str, guard: str, guard_env: str = "", **sandbox: object
) -> str:
    project.env.update(SECRETS)
    project.set_config(
        agent_command=["sh", "-c", f"{agent}{WRITE_DONE}"],
        guard_command=["sh", "-c", guard or "true"],
        sandbox=sandbox,
    )
    if guard_env:
        config = project.config_path.read_text(encoding="utf-8")
        project.config_path.write_text(
            config.replace("\n[agent]\n", f"env = {guard_env}\n\n[agent]\n"), encoding="utf-8"
        )
    project.write_tree(node("root"))
    return project.prepare()


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_no_secret_of_the_operator_reaches_the_agent_or_the_guard(
    project: Project, mode: str
) -> None:
    names = tuple(SECRETS)
    run = prepare(
        project,
        absent(*names) + present("PATH", "HOME", "RUNNER_ITER_DIR"),
        absent(*names) + present("PATH", "HOME", "RUNNER_ITER_DIR"),
        mode=mode,
    )

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=pass"]


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_what_sandbox_env_and_guard_env_name_is_passed_on_and_nothing_more(
    project: Project, mode: str
) -> None:
    run = prepare(
        project,
        present("CLOUD_SECRET_TOKEN") + absent("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"),
        present("AWS_SECRET_ACCESS_KEY") + absent("CLOUD_SECRET_TOKEN", "OPENAI_API_KEY"),
        guard_env='["AWS_*"]',
        mode=mode,
        env=["CLOUD_SECRET_TOKEN"],
    )

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=pass"]


def test_a_leaked_secret_would_fail_the_step(project: Project) -> None:
    """The checks above can fail: a guard that requires what it never gets fails the step."""
    run = prepare(project, "", present("GITHUB_TOKEN"), mode="auto")

    result = project.runner("step")

    assert f"step: run={run} iter=1 node=root status=done guard=fail" in lines(result.stdout)


@pytest.mark.parametrize("how", ["--run", "RUNNER_RUN"])
def test_the_operators_run_selector_reaches_neither_agent_nor_guard(
    project: Project, how: str
) -> None:
    # RUNNER_RUN (what `--run ID` sets) picks the run for the `runner` command; the agent and
    # guard get the runner's own RUNNER_RUN_ID instead.
    checks = absent("RUNNER_RUN") + present("RUNNER_RUN_ID", "RUNNER_ITER_DIR")
    run = prepare(project, checks, checks, mode="auto")
    if how == "RUNNER_RUN":
        project.env["RUNNER_RUN"] = run

    result = project.runner(*(("--run", run) if how == "--run" else ()), "step")

    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=done guard=pass"]
