"""A sandboxed step's agent reaches the network only through its egress proxy: a model on the
host's loopback listed in `[sandbox] allow_hosts` answers, a service on another loopback port
(the Temporal dev server's HTTP API) is refused, and `runner show` lists the
refusal from network.log, which the log archive keeps. Skipped where bubblewrap does not work,
except under CI=true."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_shell.sandbox.status import probe
from tests.helpers.crash import cli
from tests.helpers.e2e import Project, node
from tests.helpers.loopback_service import Service

BWRAP = probe()
pytestmark = pytest.mark.skipif(
    BWRAP.bwrap is None and os.environ.get("CI") != "true",
    reason=f"bubblewrap is not usable here: {BWRAP.problem}",
)
TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])


@pytest.fixture
def model() -> Iterator[Service]:
    service = Service()
    yield service
    service.close()


@pytest.fixture
def temporal() -> Iterator[Service]:
    service = Service()
    yield service
    service.close()


def agent_script(tmp_path: Path, model: Service, temporal: Service) -> Path:
    """An agent that asks its model, then tries the Temporal API, and says done."""
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, os, urllib.request\n"
        "def fetch(url):\n"
        "    try:\n"
        "        return urllib.request.urlopen(url, timeout=10).read().decode()\n"
        "    except Exception as error:\n"
        "        return f'error {error}'\n"
        f"seen = [fetch('http://127.0.0.1:{model.port}/v1/responses'),\n"
        f"        fetch('http://127.0.0.1:{temporal.port}/api/v1/namespaces')]\n"
        "open('seen.json', 'w').write(json.dumps(seen))\n"
        "open(os.environ['RUNNER_OUTPUT_PATH'], 'w').write(\n"
        "    json.dumps({'status': 'done', 'summary': 'asked'}))\n",
        encoding="utf-8",
    )
    return script


def test_the_agent_reaches_its_listed_model_and_the_refusal_is_shown(
    project: Project, tmp_path: Path, model: Service, temporal: Service
) -> None:
    script = agent_script(tmp_path, model, temporal)
    project.prepare(
        TWO_LEAVES,
        agent_command=["python3", str(script)],
        sandbox={"mode": "bwrap", "allow_hosts": [f"127.0.0.1:{model.port}"]},
    )

    result = cli(project, "step")

    assert result.returncode == 0, result.stderr
    iteration = project.run_state()["next_iter"] - 1
    record = project.meta(iteration)
    assert record["status"] == "done", record
    seen = json.loads(project.git("show", "HEAD:seen.json"))
    assert seen == ["served /v1/responses", "error HTTP Error 403: Forbidden"]
    assert model.paths == ["/v1/responses"] and temporal.paths == []

    shown = cli(project, "show", str(iteration))
    assert shown.returncode == 0, shown.stderr
    assert "network: 1 refused (network.log)" in shown.stdout
    assert f"  refused 127.0.0.1:{temporal.port} at " in shown.stdout
    assert ": not in the allow-list" in shown.stdout
    document = json.loads(cli(project, "show", str(iteration), "--json").stdout)
    assert [(r["host"], r["port"]) for r in document["network_refused"]] == [
        ("127.0.0.1", temporal.port)
    ]
    archived = project.git(
        "ls-tree", "-r", "--name-only", f"refs/runner/logs/{project.run_id}"
    ).split()
    assert f"0-99/{iteration}/network.log" in archived


def test_without_allow_hosts_a_command_agent_reaches_nothing(
    project: Project, tmp_path: Path, model: Service, temporal: Service
) -> None:
    script = agent_script(tmp_path, model, temporal)
    project.prepare(TWO_LEAVES, agent_command=["python3", str(script)], sandbox={"mode": "bwrap"})

    assert cli(project, "step").returncode == 0
    seen = json.loads(project.git("show", "HEAD:seen.json"))

    assert seen == ["error HTTP Error 403: Forbidden"] * 2
    assert model.paths == [] and temporal.paths == []
