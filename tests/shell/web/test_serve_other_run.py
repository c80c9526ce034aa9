"""`runner serve --run X` and `?run=X` show run X whole: its header and tree beside its
history, never the checked-out run's."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from runner_shell.web.hosts import allowed_hosts
from runner_shell.web.serve import create_app
from tests.helpers.e2e import ProjectFactory
from tests.helpers.serve import leaves_tree, script_leaves

BASE = "http://127.0.0.1:8765"


def test_serve_run_x_shows_run_x_s_header_and_tree_and_status_honours_run(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree())
    script_leaves(project, 3, sleep=0)
    assert project.runner("loop").returncode == 0
    first = project.run_id
    assert project.runner("start", "--new").returncode == 0
    second = project.run_id
    app = create_app(project.root, first, allowed_hosts("127.0.0.1", 8765, "box"))

    with TestClient(app, base_url=BASE) as client:
        served = client.get("/api/status").json()
        overview = client.get("/api/overview").json()
        asked = client.get(f"/api/status?run={second}").json()
        node = client.get("/api/nodes/root.1")

    assert served["run_id"] == first
    assert served["selected"]["status"] == "complete"
    assert {row["id"]: row["state"] for row in served["tree"]}["root.1"] == "completed"
    assert overview["state"] == "complete" and overview["iteration"] == 3
    assert asked["run_id"] == second
    assert node.status_code == 200 and node.json()["executions"]
