"""`runner serve`: the API answers the terminal views' documents; safety; SSE beside a real loop.

API tests use Starlette's TestClient on a repository a real loop has run; the SSE tests use a
real `runner serve` process while a real `runner loop` with a fake agent runs.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx2 as httpx
import jsonschema
import pytest
from starlette.testclient import TestClient

from runner_core.loop.events import EventOrigin, operator, waiting
from runner_core.views.web import page_view
from runner_shell.errors import UserFacingError
from runner_shell.git.log_archive import ArchiveError
from runner_shell.git.repo import GitError, Repo
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.store.event_log import append_events
from runner_shell.store.files import FileTooLarge, NotRegularFile
from runner_shell.store.layout import RunnerPaths
from runner_shell.views.reading import status_reading
from runner_shell.web.hosts import allowed_hosts
from runner_shell.web.serve import (
    CLIENT_QUEUE,
    Api,
    Broker,
    Client,
    StatusCache,
    Watcher,
    _guarded,
    create_app,
)
from tests.helpers import SCHEMAS
from tests.helpers.e2e import PYTHON, Project, ProjectFactory
from tests.helpers.serve import (
    SseReader,
    free_port,
    leaves_tree,
    script_leaves,
    serve_process,
    serving,
)

BASE = "http://127.0.0.1:8765"


def view_schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / "views" / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def completed_run(base: Path, make_project: ProjectFactory) -> Project:
    """A project whose run a real loop completed: three leaves, each done in one iteration."""
    project = make_project(base, "started")
    project.prepare(leaves_tree())
    script_leaves(project, 3, sleep=0)
    result = project.runner("loop")
    assert result.returncode == 0, result.stderr
    return project


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, make_project: ProjectFactory) -> Project:
    return completed_run(tmp_path_factory.mktemp("serve"), make_project)


@pytest.fixture(scope="module")
def client(finished: Project) -> Any:
    app = create_app(finished.root, None, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        yield test_client


def cli_json(project: Project, *args: str) -> Any:
    result = project.runner(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("url", "command"),
    [
        ("/api/status", ("status",)),
        ("/api/history", ("history",)),
        ("/api/report", ("report",)),
        ("/api/runs", ("runs",)),
        ("/api/iterations/2", ("show", "2")),
        ("/api/iterations/1/diff", ("diff", "1")),
    ],
)
def test_the_api_answers_the_documents_of_the_terminal_views(
    finished: Project, client: TestClient, url: str, command: tuple[str, ...]
) -> None:
    answer = client.get(url)

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == cli_json(finished, *command)


def test_metrics_are_the_prometheus_text_of_runner_metrics(
    finished: Project, client: TestClient
) -> None:
    answer = client.get("/metrics")

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert answer.text == finished.runner("metrics").stdout


def test_a_run_is_chosen_by_query_among_the_known_runs(
    finished: Project, client: TestClient
) -> None:
    run = finished.run_id

    assert client.get(f"/api/history?run={run}").json()["run_id"] == run
    unknown = client.get("/api/history?run=run-00000000")
    assert unknown.status_code == 404
    assert unknown.json()["error"].startswith("unknown run 'run-00000000'")
    assert client.get("/api/report?run=../../etc").status_code == 404


@attrs.frozen
class TwoRuns:
    project: Project
    first: str
    second: str


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, make_project: ProjectFactory) -> TwoRuns:
    """A completed run, then a second one started beside it (no iteration yet): the current."""
    project = completed_run(tmp_path_factory.mktemp("serve_two_runs"), make_project)
    first = project.run_id
    started = project.runner("start", "--new")
    assert started.returncode == 0, started.stderr
    return TwoRuns(project, first, project.run_id)


def test_serve_run_is_the_run_of_every_document_a_request_names_no_run_for(
    two_runs: TwoRuns,
) -> None:
    project, first = two_runs.project, two_runs.first
    app = create_app(project.root, first, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        history = test_client.get("/api/history").json()
        report = test_client.get("/api/report").json()
        iteration = test_client.get("/api/iterations/1")
        metrics = test_client.get("/metrics").text
        chosen = test_client.get(f"/api/history?run={two_runs.second}").json()

    assert history == cli_json(project, "history", "--run", first)
    assert report == cli_json(project, "report", "--run", first)
    assert iteration.status_code == 200
    assert iteration.json() == cli_json(project, "show", "1", "--run", first)
    assert metrics == project.runner("metrics", "--run", first).stdout
    assert chosen["run_id"] == two_runs.second


def test_the_overview_says_the_run_state_and_rolls_tokens_up(client: TestClient) -> None:
    overview = client.get("/api/overview").json()

    jsonschema.validate(overview, view_schema("overview"))
    assert overview["state"] == "complete"
    assert overview["iteration"] == 3
    assert (overview["loop_alive"], overview["wait"]) == (False, None)
    assert set(overview["rollups"]) == {"root", "root.1", "root.2", "root.3"}
    # No agent reported a cost: none is shown, as `runner report` shows `cost_usd=-`.
    assert overview["rollups"]["root"]["cost_usd"] is None


def test_a_live_loop_s_wait_is_the_overview_s_state_until_it_ends(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = make_project(tmp_path, "started")
    run = project.prepare(leaves_tree())
    until = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    origin = EventOrigin(run, 1, None, "2026-01-01T00:00:00Z")
    events_log = project.runner_dir / "iterations" / run / "events.jsonl"
    events_log.parent.mkdir(parents=True, exist_ok=True)
    append_events(events_log, [waiting(origin, "rate_limited", until, 600)])
    app = create_app(project.root, None, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        idle = test_client.get("/api/overview").json()
        with exclusive_lock(Repo(project.root)):  # as the sleeping `runner loop` holds it
            waited = test_client.get("/api/overview").json()
        after = test_client.get("/api/overview").json()

    jsonschema.validate(waited, view_schema("overview"))
    assert (waited["state"], waited["loop_alive"]) == ("waiting", True)
    assert waited["wait"] == {"reason": "rate_limited", "until": until, "secs": 600}
    # Without a runner holding the lock nobody is waiting: the run is idle.
    assert (idle["state"], idle["wait"]) == ("idle", None)
    assert (after["state"], after["loop_alive"]) == ("idle", False)


@pytest.mark.parametrize("plant", ["fifo", "symlink"])
def test_a_planted_lock_file_is_never_a_runner_at_work_and_never_blocks(
    tmp_path: Path, make_project: ProjectFactory, plant: str
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree())
    lock = Path(Repo(project.root).common_path("runner.lock"))
    lock.unlink(missing_ok=True)
    if plant == "fifo":
        os.mkfifo(lock)  # an agent's: reading it would wait for a writer forever
    else:
        held = tmp_path / "held"  # a lock some other program holds, outside the repository
        held.write_text(f"pid {os.getpid()}: runner loop\n", encoding="utf-8")
        lock.symlink_to(held)
    app = create_app(project.root, None, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        if plant == "symlink":
            with held.open("rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                overview = test_client.get("/api/overview").json()
        else:
            overview = test_client.get("/api/overview").json()

    assert (overview["loop_alive"], overview["state"]) == (False, "idle")


def test_a_reached_budget_is_the_overview_s_state_and_status_shows_spent_vs_limit(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree(), budget={"max_cost_usd": 0.2})
    usage = {"cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}
    project.agent_script({1: {"usage": usage, "output": {"status": "done", "summary": "one"}}})
    project.guard_script([{"stdout": "ok\n"}])
    assert project.runner("loop").returncode == 1

    app = create_app(project.root, None, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        overview = test_client.get("/api/overview").json()
        status = test_client.get("/api/status").json()

    assert overview["state"] == "budget"
    assert overview["rollups"]["root"]["cost_usd"] == 0.25
    assert status["budgets"] == [
        {"budget": "cost_usd", "spent": 0.25, "limit": 0.2, "exhausted": True}
    ]


def test_a_node_shows_its_goal_acceptance_path_and_executions(client: TestClient) -> None:
    detail = client.get("/api/nodes/root.2").json()

    assert detail["path"] == "root/root.2"
    assert detail["goal"] == "Do root.2."
    assert detail["acceptance"] == ["root.2 is done"]
    assert [(e["iteration"], e["status"], e["guard"]) for e in detail["executions"]] == [
        (2, "done", "pass")
    ]
    assert client.get("/api/nodes/nope").status_code == 404


def test_an_iteration_file_is_served_by_a_name_its_listing_holds(
    finished: Project, client: TestClient
) -> None:
    listing = client.get("/api/iterations/1").json()
    name = listing["files"][0]["name"]

    answer = client.get(f"/api/iterations/1/files/{name}")

    assert answer.status_code == 200
    assert answer.text == (finished.iter_dir(1) / name).read_text(encoding="utf-8")


def test_a_symlink_the_agent_planted_in_an_iteration_is_never_served(
    finished: Project, client: TestClient
) -> None:
    planted = finished.iter_dir(3) / "planted.log"
    planted.symlink_to(finished.root / "README.md")
    try:
        answer = client.get("/api/iterations/3/files/planted.log")
    finally:
        planted.unlink()

    assert answer.status_code == 404
    assert answer.json()["error"] == "no file 'planted.log' in iteration '3'"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (NotRegularFile(Path("/r/1/agent.log"), "a FIFO"), 409),
        (GitError("git diff failed:\nfatal: bad object"), 409),
        (ArchiveError("logs.tar is damaged"), 409),
        (UserFacingError("no iteration '9' in run run-1"), 404),
        (FileTooLarge(Path("/r/1/agent.log"), 2, 1), 413),
    ],
)
def test_an_endpoint_answers_a_read_error_in_one_json_line_never_a_500(
    error: Exception, status: int
) -> None:
    """What the Watcher tolerates (READ_ERRORS) an endpoint answers: a file raced into a FIFO,
    git or the log archive refusing."""

    def failing(request: Any) -> Any:
        raise error

    answer = _guarded(failing)(None)  # type: ignore[arg-type]

    assert answer.status_code == status
    message = json.loads(bytes(answer.body))["error"]
    assert message and len(message.splitlines()) == 1


@pytest.mark.parametrize(
    "url",
    [
        "/api/iterations/..%2F..%2Fetc%2Fpasswd",
        "/api/iterations/../../etc/passwd",
        "/api/iterations/01",
        "/api/iterations/99",
        "/api/iterations/99/diff",
        "/api/iterations/..%2F1/diff",
        "/api/iterations/-1",
        "/api/iterations/1/files/..%2F..%2Fstate%2Ftree.json",
        "/api/iterations/1/files/nope.log",
        "/api/nodes/..%2Froot",
        "/static/../pyproject.toml",
        "/.runner/state/config.toml",
    ],
)
def test_urls_are_looked_up_never_joined_into_a_path(client: TestClient, url: str) -> None:
    assert client.get(url).status_code == 404


def test_a_request_naming_another_host_is_refused(client: TestClient) -> None:
    answer = client.get("/api/status", headers={"Host": "attacker.example:8765"})

    assert answer.status_code == 421
    assert "unknown Host header 'attacker.example:8765'" in answer.text
    assert client.get("/api/status", headers={"Host": "127.0.0.1:9999"}).status_code == 421
    assert client.get("/api/status", headers={"Host": "localhost:8765"}).status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_nothing_but_get_and_head_is_answered(client: TestClient, method: str) -> None:
    answer = client.request(method, "/api/status")

    assert answer.status_code == 405
    assert client.head("/api/status").status_code == 200


def test_the_page_is_served_from_the_package_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")

    assert page.status_code == 200
    assert '<script src="/app.js"></script>' in page.text
    assert page.headers["content-security-policy"] == "default-src 'self'"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert client.get("/app.js").status_code == 200
    assert client.get("/app.css").status_code == 200
    assert "http" not in client.get("/app.js").text.replace("http://", "")


def test_errors_a_user_can_cause_are_one_line_on_stderr(finished: Project) -> None:
    port = free_port()
    with serving(finished, port):
        result = finished.runner("serve", "--port", str(port))

    assert result.returncode == 1
    assert result.stderr.startswith(f"runner: serve: cannot listen on 127.0.0.1:{port}: ")
    assert len(result.stderr.splitlines()) == 1
    unknown = finished.runner("serve", "--run", "run-00000000")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("runner: unknown run 'run-00000000'")


def test_other_commands_never_import_starlette(finished: Project) -> None:
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['runner', 'status']\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn')))\n"
    )
    result = subprocess.run(
        [PYTHON, "-c", probe], cwd=finished.root, env=finished.env, capture_output=True, text=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


def test_a_client_that_falls_behind_is_dropped_not_waited_for() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        broker = Broker()
        slow, quick = Client(), Client()
        broker.clients.update((slow, quick))
        for n in range(CLIENT_QUEUE + 1):
            broker.publish("state", str(n))
            if n % 2 == 0:
                while not quick.queue.empty():
                    quick.queue.get_nowait()
        return slow.dropped, slow in broker.clients, quick.queue.qsize()

    dropped, still_listed, backlog = asyncio.run(scenario())

    assert dropped and not still_listed
    assert backlog <= 1


@attrs.frozen
class FailingOnce(Api):
    """An Api whose first reading of the documents fails, as a run caught mid-change does."""

    calls: list[int] = attrs.field(factory=list)

    def documents(self, cache: StatusCache | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        self.calls.append(len(self.calls))
        if len(self.calls) == 1:
            raise OSError("tree.json changed while it was read")
        return super().documents(cache)


async def first_view(client: Client) -> dict[str, Any]:
    """The data of the next `view` event the client receives (the run's events.jsonl lines come
    too; they are skipped)."""
    while True:
        message = await client.queue.get()
        if "\nevent: view\n" in message:
            fields = dict(line.split(": ", 1) for line in message.strip().splitlines())
            return json.loads(fields["data"])  # type: ignore[no-any-return]


async def following(watcher: Watcher) -> None:
    """Once the watcher follows a run's events: what is appended from then on reaches clients."""
    while watcher.following is None:
        await asyncio.sleep(0.05)


def view_after_a_failed_reading(project: Project) -> dict[str, Any]:
    """The `view` a Watcher publishes when the pages last saw the run running and its first
    reading of the documents failed, so that the view comes from a later poll."""

    async def scenario() -> dict[str, Any]:
        paths, repo = RunnerPaths(project.root), Repo(project.root)
        status, overview = Api(paths, repo, None).documents()
        seen = page_view(status, overview | {"state": "running"})
        broker, client = Broker(), Client()
        broker.clients.add(client)
        watcher = Watcher(paths, repo, FailingOnce(paths, repo, None), broker, page=seen)
        task = asyncio.create_task(watcher.run_forever())
        try:
            return await asyncio.wait_for(first_view(client), timeout=10)
        finally:
            watcher.stop.set()
            task.cancel()

    return asyncio.run(scenario())


def test_a_view_that_could_not_be_read_is_read_again_though_nothing_changes_after(
    finished: Project,
) -> None:
    """The pages last saw the run running; it completed, and the server's one reading of that
    failed (the run caught mid-change). Nothing changes after: the next poll must read again."""
    view = view_after_a_failed_reading(finished)

    assert view["head"]["overview"]["state"] == "complete"


@pytest.mark.parametrize("plant", ["symlink_loop", "file_as_run_dir"])
def test_a_watched_path_the_agent_made_unreadable_never_stops_the_pages_updating(
    tmp_path: Path, make_project: ProjectFactory, plant: str
) -> None:
    """A stat that fails with ELOOP or ENOTDIR is a missing file to the Watcher: its polling
    task (which nobody awaits) must go on, or the pages never update again."""
    project = completed_run(tmp_path, make_project)
    if plant == "symlink_loop":
        journal = Repo(project.root).common_path("runner-journal.json")
        journal.symlink_to(journal)  # ELOOP
    else:
        run_dir = project.iter_dir(1).parent
        subprocess.run(["rm", "-rf", str(run_dir)], check=True)
        run_dir.write_text("not a directory\n", encoding="utf-8")  # events.jsonl: ENOTDIR

    view = view_after_a_failed_reading(project)

    assert view["head"]["overview"]["state"] == "complete"


def test_the_event_stream_follows_the_next_run_once_runner_start_begins_it(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    first = project.run_id

    async def event_of(client: Client, run: str, kind: str) -> None:
        while True:
            message = await client.queue.get()
            if f"\nevent: {kind}\n" in message and f'"run_id":"{run}"' in message:
                return

    async def tell(paths: RunnerPaths, run: str, iteration: int, text: str) -> None:
        origin = EventOrigin(run, iteration, None, "2026-01-01T00:00:00Z")
        events_log = paths.events_log(run)
        events_log.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(append_events, events_log, [operator(origin, "tell", text)])

    async def scenario() -> str:
        paths, repo = RunnerPaths(project.root), Repo(project.root)
        broker, client = Broker(), Client()
        broker.clients.add(client)
        watcher = Watcher(paths, repo, Api(paths, repo, None), broker)
        task = asyncio.create_task(watcher.run_forever())
        try:
            await asyncio.wait_for(following(watcher), timeout=10)
            await tell(paths, first, 9, "hi")
            await asyncio.wait_for(event_of(client, first, "operator"), timeout=10)
            started = await asyncio.to_thread(project.runner, "start", "--new")
            assert started.returncode == 0, started.stderr
            second = project.run_id
            await tell(paths, second, 1, "hi")
            await asyncio.wait_for(event_of(client, second, "operator"), timeout=10)
            return second
        finally:
            watcher.stop.set()
            task.cancel()

    assert asyncio.run(scenario()) != first


def test_a_long_run_s_past_events_are_never_replayed_to_the_pages_only_what_follows(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    paths, repo = RunnerPaths(project.root), Repo(project.root)
    origin = EventOrigin(project.run_id, 9, None, "2026-01-01T00:00:00Z")
    past = [operator(origin, "tell", f"past {n}") for n in range(CLIENT_QUEUE + 10)]
    append_events(paths.events_log(project.run_id), past)

    async def scenario() -> tuple[list[str], bool]:
        broker, client = Broker(), Client()
        broker.clients.add(client)
        watcher = Watcher(paths, repo, Api(paths, repo, None), broker)
        task = asyncio.create_task(watcher.run_forever())
        try:
            await asyncio.wait_for(following(watcher), timeout=10)
            now = [operator(origin, "tell", "now")]
            await asyncio.to_thread(append_events, paths.events_log(project.run_id), now)
            told: list[str] = []
            while "now" not in told:
                message = await asyncio.wait_for(client.queue.get(), timeout=10)
                if "\nevent: operator\n" in message:
                    told.append(json.loads(message.split("data: ", 1)[1])["detail"])
            return told, client.dropped
        finally:
            watcher.stop.set()
            task.cancel()

    told, dropped = asyncio.run(scenario())

    assert told == ["now"]
    assert not dropped


def test_agent_output_re_reads_only_the_overview_s_wait_not_the_status(
    tmp_path: Path, make_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each chunk of agent output changes events.jsonl; the status document depends on none
    of it, so the Watcher reads it again only when a file it is read from changes."""
    project = make_project(tmp_path, "started")
    run = project.prepare(leaves_tree())
    paths, repo = RunnerPaths(project.root), Repo(project.root)
    readings: list[int] = []

    def counted(*args: Any) -> Any:
        readings.append(1)
        return status_reading(*args)

    monkeypatch.setattr("runner_shell.web.serve.status_reading", counted)
    api, cache = Api(paths, repo, None), StatusCache()
    until = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    origin = EventOrigin(run, 1, None, "2026-01-01T00:00:00Z")
    events_log = paths.events_log(run)
    events_log.parent.mkdir(parents=True, exist_ok=True)

    first = api.documents(cache)
    append_events(events_log, [waiting(origin, "rate_limited", until, 600)])
    with exclusive_lock(repo):  # as the sleeping `runner loop` holds it
        waited = api.documents(cache)
        append_events(events_log, [waiting(origin, "runner_error", until, 120)])
        again = api.documents(cache)
        reads_while_waiting = len(readings)
        paths.guidance.write_text("Prefer small steps.\n", encoding="utf-8")
        told = api.documents(cache)

    assert first[1]["state"] == "idle"
    assert waited[1]["wait"] == {"reason": "rate_limited", "until": until, "secs": 600}
    assert again[1]["wait"] == {"reason": "runner_error", "until": until, "secs": 120}
    assert again[0] == waited[0]
    # Once at first, once as the lock was taken (a runner's liveness changes the status).
    assert reads_while_waiting == 2
    assert told[0]["guidance"] == "Prefer small steps.\n"
    assert told[0] == api.documents()[0]


def test_the_watcher_warns_each_problem_of_the_run_once_not_at_every_poll(
    tmp_path: Path, make_project: ProjectFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree())
    paths, repo = RunnerPaths(project.root), Repo(project.root)
    journal = repo.common_path("runner-journal.json")
    journal.symlink_to(journal)  # a damaged journal is a warning of every status reading
    api, cache = Api(paths, repo, None), StatusCache()

    for note in ("one", "two", "three"):  # each a change: the status is read again
        paths.guidance.write_text(f"{note}\n", encoding="utf-8")
        api.documents(cache)

    warnings = capfd.readouterr().err.splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith(f"runner: warning: {journal} is damaged")


def test_a_real_server_streams_state_and_events_while_a_real_loop_runs(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = make_project(tmp_path, "started")
    run = project.prepare(leaves_tree())
    script_leaves(project, 3, sleep=0.6)
    with serving(project, free_port()) as base:
        reader = SseReader(f"{base}/api/events").start()
        assert reader.said_hello.wait(10)
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop"], cwd=project.root, env=project.env
        )
        running_seen = False
        while loop.poll() is None:
            running_seen |= bool(httpx_json(f"{base}/api/status")["running"])
            time.sleep(0.2)
        origin = EventOrigin(run, 4, None, "2026-01-01T00:00:00Z")
        append_events(project.iter_dir(1).parent / "events.jsonl", [operator(origin, "tell", "hi")])
        deadline = time.monotonic() + 10
        while not (reader.events("operator") and completes(reader)) and time.monotonic() < deadline:
            time.sleep(0.1)
        final = httpx_json(f"{base}/api/overview")
        final_status = httpx_json(f"{base}/api/status")
        reader.stop.set()

    assert loop.returncode == 0
    assert running_seen
    changed = {name for event in reader.events("state") for name in event["changed"]}
    assert changed == {"run_state", "tree", "journal"}
    assert reader.events("operator")[0]["command"] == "tell"
    ids = [ident for ident, _, _ in reader.messages]
    assert ids == list(range(1, len(ids) + 1))
    assert final["state"] == "complete"
    # The server read the documents once per change for every client and sent what changed.
    views = reader.events("view")
    completed = {row["id"] for view in views for row in view["rows"] if row["state"] == "completed"}
    assert completed == {"root", "root.1", "root.2", "root.3"}
    heads = [view["head"] for view in views if view["head"] is not None]
    assert heads[-1]["overview"]["state"] == "complete"
    assert heads[-1]["status"] | {"tree": final_status["tree"], "removed": []} == final_status


def completes(reader: SseReader) -> bool:
    """Whether a `view` event has said the run is complete (it may come after the loop's events:
    the server reads the documents after its next poll)."""
    heads = [view["head"] for view in reader.events("view") if view["head"] is not None]
    return bool(heads) and heads[-1]["overview"]["state"] == "complete"


def httpx_json(url: str) -> Any:
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_another_host_than_loopback_is_a_warning_on_stderr(finished: Project) -> None:
    process = serve_process(finished, "--host", "0.0.0.0", "--port", str(free_port()))
    try:
        assert process.stderr is not None
        warning = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert warning.startswith("runner: warning: serving on 0.0.0.0: anyone who can reach ")


def test_after_git_clean_a_node_shows_its_executions_from_the_archive(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    project.git("clean", "-fdxq")

    app = create_app(project.root, None, allowed_hosts("127.0.0.1", 8765, "box"))
    with TestClient(app, base_url=BASE) as test_client:
        detail = test_client.get("/api/nodes/root.2").json()
        iteration = test_client.get("/api/iterations/1")
        diff = test_client.get("/api/iterations/1/diff")

    assert [(e["iteration"], e["status"], e["guard"]) for e in detail["executions"]] == [
        (2, "done", "pass")
    ]
    # The iteration pages read it as `runner show` and `runner diff` do: from the archive.
    assert (iteration.status_code, diff.status_code) == (200, 200)
    assert iteration.json() == cli_json(project, "show", "1")
    assert diff.json() == cli_json(project, "diff", "1")
