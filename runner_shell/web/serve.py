"""`runner serve`: a read-only web view of a run, live by server-sent events.

Serves the page (runner_shell/static), the `--json` documents of the terminal views built by
the same functions, and `/api/events`: every line of the run's `events.jsonl` plus a `state`
event whenever run_state.json, tree.json or a journal change. Never takes the runner lock,
never writes a file, answers only GET and HEAD, and only to requests naming the bound host.
Imported only by `runner serve`, so other commands never load Starlette.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp

from runner_core.history.records import ExecutionHistory
from runner_core.json_form import json_form
from runner_core.loop.events import Event, event_line
from runner_core.run.listing import RunsDocument
from runner_core.views.diff import DiffDocument
from runner_core.views.status import status_to_json
from runner_core.views.text import error_line
from runner_core.views.web import (
    LoopFacts,
    PageView,
    node_detail,
    overview_to_json,
    page_view,
    view_delta,
)
from runner_shell.errors import UserFacingError, failure_line
from runner_shell.git.log_archive import ArchiveError
from runner_shell.git.repo import GitError, Repo
from runner_shell.step.lock_and_journal import job_journals_dir, journal_path, lock_held
from runner_shell.step.run_branches import gather_runs
from runner_shell.store.event_log import EventTail, LastEvents, follow_failure, follow_tail
from runner_shell.store.files import read_bytes_capped
from runner_shell.store.history_fold import HistoryFold, same_records
from runner_shell.store.iteration_log import iteration_dirs
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state
from runner_shell.views.history import iteration_diff, iteration_document
from runner_shell.views.operator_log import OperatorLog
from runner_shell.views.reading import (
    StatusReading,
    choose_run,
    history_document,
    metrics_document,
    report_document,
    run_files,
    run_history,
    status_reading,
    status_sources,
    warn,
)
from runner_shell.web.answers import (
    iteration_number,
    listening_socket,
    not_found,
    unreadable,
    url_host,
)
from runner_shell.web.facts import PageFacts
from runner_shell.web.facts import file_stamp as _stamp
from runner_shell.web.hosts import HostGuard, allowed_hosts, is_loopback
from runner_shell.web.page import render_page
from runner_shell.web.pictures import DrawingMemo, pictures_html

STATIC = Path(__file__).parent / "static"
PAGES = {"/app.js": "app.js", "/app.css": "app.css"}
FILE_MAX_BYTES = 1024 * 1024
POLL_SECS = 0.5
HEARTBEAT_SECS = 15.0
# A client this many messages behind is too slow: it is dropped rather than waited for.
CLIENT_QUEUE = 1000
# What reading a run's files can fail with while an agent changes, damages or plants them, or
# git or the log archive refuses: the Watcher reads again at its next poll, an endpoint answers.
READ_ERRORS = (UserFacingError, OSError, GitError, ArchiveError)


@attrs.define(eq=False)
class Client:
    """One `/api/events` subscriber: its bounded queue, and whether it fell too far behind."""

    queue: asyncio.Queue[str] = attrs.field(factory=lambda: asyncio.Queue(CLIENT_QUEUE))
    dropped: bool = False


@attrs.define
class Broker:
    """Fans each message out to every client without ever waiting for one."""

    clients: set[Client] = attrs.field(factory=set)
    sent: int = 0
    # Why the run's events stopped reaching the pages: shown by each, a late one too (hello).
    events_failure: str | None = None

    def publish(self, name: str, data: str) -> None:
        self.sent += 1
        message = f"id: {self.sent}\nevent: {name}\ndata: {data}\n\n"
        for client in list(self.clients):
            try:
                client.queue.put_nowait(message)
            except asyncio.QueueFull:
                client.dropped = True
                self.clients.discard(client)


@attrs.define
class StatusCache:
    """The Watcher's last status reading, its document, the stamps of what it was read from and
    the history's records (a new iteration's meta.json is read, not the whole history: its
    fold); each warning met while reading is printed once per server, not at every poll."""

    stamps: object = None
    last: tuple[StatusReading, dict[str, Any]] | None = None
    warned: set[str] = attrs.field(factory=set)
    records: HistoryFold = attrs.field(factory=HistoryFold)  # the history's, kept
    operators: OperatorLog = attrs.field(factory=OperatorLog)  # the run's operator commits
    events: LastEvents = attrs.field(factory=LastEvents)  # the events log's end, kept

    def reading(self, api: Api, alive: bool) -> tuple[StatusReading, dict[str, Any]]:
        # Stamped before reading: a change during the reading is a change at the next poll.
        stamps = (alive, tuple(_stamp(path) for path in status_sources(api.paths, api.repo)))
        if self.last is None or stamps != self.stamps:
            found = (self.warn_once, api.run, self.records, self.operators)
            reading = status_reading(api.paths, api.repo, *found)
            if self.last is not None and same_records(self.last[0].history, reading.history):
                # The history kept while no record changed: what is drawn from it stays drawn.
                reading = attrs.evolve(reading, history=self.last[0].history)
            self.stamps, self.last = stamps, (reading, status_to_json(reading.view))
        return self.last

    def warn_once(self, line: str) -> None:
        if line not in self.warned:
            self.warned.add(line)
            warn(line)


@attrs.define
class Watcher:
    """Polls the run's files by stat and tails its `events.jsonl` in a thread; after any change
    it reads the documents once for every client and publishes what changed as a `view` event."""

    paths: RunnerPaths
    repo: Repo
    api: Api
    broker: Broker
    stop: threading.Event = attrs.field(factory=threading.Event)
    following: str | None = None
    follower_stop: threading.Event = attrs.field(factory=threading.Event)
    page: PageView | None = None
    cache: StatusCache = attrs.field(factory=StatusCache)
    # The pictures last drawn (a `pictures` event carries them whole when they change), and
    # each one's SVG with what it was drawn from.
    pictures: str | None = None
    drawings: DrawingMemo = attrs.field(factory=dict)

    def watched(self) -> dict[str, Path]:
        return {
            "run_state": self.paths.run_state,
            "tree": self.paths.tree,
            "journal": journal_path(self.repo),
            "jobs": job_journals_dir(self.repo),
        }

    def _readings(self, files: dict[str, Path]) -> dict[str, object]:
        """Each watched file's stat, the events log's and whether a runner holds the lock."""
        readings: dict[str, object] = {name: _stamp(path) for name, path in files.items()}
        if self.following is not None:
            readings["events"] = _stamp(self.paths.events_log(self.following))
        readings["lock"] = lock_held(self.repo)
        return readings

    async def run_forever(self) -> None:
        files = self.watched()
        self._follow_run()
        readings = self._readings(files)
        current = await self._publish_view()
        while not self.stop.is_set():
            await asyncio.sleep(POLL_SECS)
            now = self._readings(files)
            changed = [name for name in files if now[name] != readings[name]]
            if changed:
                self.broker.publish("state", json.dumps({"changed": changed}))
                if "run_state" in changed:
                    self._follow_run()
            if now != readings or not current:
                current = await self._publish_view()
            readings = now

    async def _publish_view(self) -> bool:
        """Read the documents (in a worker thread) and publish the `view` delta, if any. False
        when they could not be read (a run mid-change, damaged, or git slow): the next poll reads
        them again even if nothing changes after, so the last state of a run always reaches the
        pages."""
        try:
            facts = await asyncio.to_thread(self.api.page_facts, self.cache)
        except READ_ERRORS:
            return False
        assert facts.status is not None and facts.overview is not None
        page = page_view(facts.status, facts.overview)
        delta = view_delta(self.page, page)
        self.page = page
        if delta is not None:
            self.broker.publish("view", json.dumps(delta, sort_keys=True))
        pictures = pictures_html(facts, self.drawings)
        if self.pictures is not None and pictures != self.pictures:
            self.broker.publish("pictures", json.dumps({"html": pictures}))
        self.pictures = pictures
        return True

    def _follow_run(self) -> None:
        """Tail the events.jsonl of `serve --run`, else of the current run once it is known, and
        of the next run once `runner start` begins one: the old run's follower is stopped (it
        ends once it has sent what its file holds).

        The first run followed is read from its end: what it already holds is in the documents
        every page reads, and replaying a long run's events would flood every client that
        connected early. A run begun while serving is read from its first event."""
        run_id = self.api.run
        if run_id is None:
            with contextlib.suppress(UserFacingError, OSError):
                run_id = load_run_state(self.paths).run_id
        if run_id is None or run_id == self.following:
            return
        path = self.paths.events_log(run_id)
        tail = EventTail(path) if self.following is not None else EventTail.at_end(path)
        self.follower_stop.set()
        stop = self.follower_stop = threading.Event()
        self.following = run_id
        if self.broker.events_failure is not None:  # the last run's: its pages hide it
            self.broker.events_failure = None
            self.broker.publish("events_failed", json.dumps({"error": None}))
        loop = asyncio.get_running_loop()
        events = follow_tail(tail, stop=lambda: stop.is_set() or self.stop.is_set())
        thread = threading.Thread(target=self._forward, args=(events, loop), daemon=True)
        thread.start()

    def _forward(self, events: Iterator[Event], loop: asyncio.AbstractEventLoop) -> None:
        try:
            for event in events:
                line = event_line(event).rstrip("\n")
                with contextlib.suppress(RuntimeError):  # the server's loop has closed
                    loop.call_soon_threadsafe(self.broker.publish, event.type.value, line)
        except Exception as error:  # a follower never ends without saying why
            why = follow_failure(error)
            print(failure_line(f"live events stopped: {why}"), file=sys.stderr, flush=True)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._events_failed, why)

    def _events_failed(self, why: str) -> None:
        self.broker.events_failure = why
        self.broker.publish("events_failed", json.dumps({"error": why}))


async def client_messages(
    broker: Broker, disconnected: Callable[[], Awaitable[bool]]
) -> AsyncIterator[str]:
    """One client's stream: a hello, then every message, heartbeat comments when idle."""
    client = Client()
    broker.clients.add(client)
    try:
        hello = {"sent": broker.sent, "events_failure": broker.events_failure}
        yield f"retry: 2000\nevent: hello\ndata: {json.dumps(hello)}\n\n"
        while not client.dropped:
            try:
                yield await asyncio.wait_for(client.queue.get(), HEARTBEAT_SECS)
            except TimeoutError:
                if await disconnected():
                    return
                yield ": heartbeat\n\n"
    finally:
        broker.clients.discard(client)


@attrs.frozen
class Api:
    """The endpoints; each reads the files afresh, so every answer is current."""

    paths: RunnerPaths
    repo: Repo
    run: str | None

    def _run(self, request: Request) -> str:
        """The run a request reads: `?run=`, else `serve --run`, else the current run."""
        requested = request.query_params.get("run") or self.run
        return choose_run(self.paths, load_run_state(self.paths), requested)

    def status(self, request: Request) -> Response:
        reading = status_reading(self.paths, self.repo, warn, self._run(request))
        return JSONResponse(status_to_json(reading.view))

    def documents(self, cache: StatusCache | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The status document and the overview, read afresh; with `cache`, the status reading
        is read again only when a file it depends on changed, as the events log's changes (each
        chunk of agent output) only change the overview's wait."""
        facts = self.page_facts(cache)
        assert facts.status is not None and facts.overview is not None
        return dict(facts.status), dict(facts.overview)

    def page_facts(self, cache: StatusCache | None = None) -> PageFacts:
        """What the page is rendered from: the documents, the run's history and the clock."""
        alive = lock_held(self.repo)
        if cache is None:
            reading = status_reading(self.paths, self.repo, warn, self.run)
            status = status_to_json(reading.view)
        else:
            reading, status = cache.reading(self, alive)
        run_id = status["run_id"]
        events: tuple[Event, ...] = ()
        if run_id is not None:
            path = self.paths.events_log(run_id)
            events = (LastEvents() if cache is None else cache.events).read(path)
        loop = LoopFacts(alive=alive, events=events, read_at=datetime.now(UTC))
        tree = reading.tree
        assert tree is not None, "status_reading keeps the tree unless told not to"
        overview = overview_to_json(status, tree, reading.history, loop)
        now = loop.read_at or datetime.now(UTC)
        slots = load_config(self.paths).parallel_slots
        return PageFacts(status, overview, reading.history, now, slots=slots)

    def first_state(self) -> PageFacts:
        """The page's first state, or why it cannot be read (the page then says so)."""
        try:
            return self.page_facts()
        except READ_ERRORS as error:
            problem = error_line(str(error))
            return PageFacts(None, None, ExecutionHistory(), datetime.now(UTC), problem)

    def overview(self, request: Request) -> Response:
        return JSONResponse(self.documents()[1])

    def history(self, request: Request) -> Response:
        node = request.query_params.get("node")
        shown = history_document(self.paths, self.repo, node, self._run(request))
        return JSONResponse(json_form(shown))

    def report(self, request: Request) -> Response:
        report, problems = report_document(self.paths, self.repo, self._run(request))
        return JSONResponse(json_form(attrs.evolve(report, warnings=problems)))

    def runs(self, request: Request) -> Response:
        return JSONResponse(json_form(RunsDocument(gather_runs(self.paths, self.repo))))

    def metrics(self, request: Request) -> Response:
        text = metrics_document(self.paths, self.repo, self._run(request))
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    def iteration(self, request: Request) -> Response:
        """The `runner show N --json` document: from the iteration's directory, else the log
        archive, else its commit trailers, as `runner show` reads it."""
        run_id, number = self._run(request), iteration_number(request)
        return JSONResponse(iteration_document(self.paths, self.repo, run_id, number))

    def iteration_diff(self, request: Request) -> Response:
        """The `runner diff N --json` document, from wherever `runner diff` reads it."""
        run_id, number = self._run(request), iteration_number(request)
        diff, source = iteration_diff(self.paths, self.repo, number, run_id)
        return JSONResponse(json_form(DiffDocument(run_id, number, source, diff)))

    def iteration_file(self, request: Request) -> Response:
        """One file of an iteration directory, by a name its listing holds, at most 1 MiB."""
        run_id, number = self._run(request), iteration_number(request)
        name = request.path_params["name"]
        directory = self._iteration_dir(run_id, number)
        if directory is not None:
            with os.scandir(directory) as entries:  # an agent's symlink is never followed
                for entry in entries:
                    if entry.name == name and entry.is_file(follow_symlinks=False):
                        data = read_bytes_capped(Path(entry.path), FILE_MAX_BYTES)
                        return PlainTextResponse(data.decode("utf-8", errors="replace"))
        return not_found(UserFacingError(f"no file {name!r} in iteration '{number}'"))

    def _iteration_dir(self, run_id: str, number: int) -> Path | None:
        """The iteration's directory, found among those the run has (never a joined path)."""
        return next((found for n, found in iteration_dirs(self.paths, run_id) if n == number), None)

    def node(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        state, tree = run_files(self.paths, self.repo, self.run)
        history, _ = run_history(self.paths, self.repo, state.run_id or "")
        detail = node_detail(tree, history, node_id)
        if detail is None:
            return not_found(UserFacingError(f"no node {node_id!r} in the tree"))
        return JSONResponse(detail)


def _guarded(endpoint: Callable[[Request], Response]) -> Callable[[Request], Response]:
    def answer(request: Request) -> Response:
        try:
            return endpoint(request)
        except READ_ERRORS as error:
            return unreadable(error)

    return answer


def _page(name: str) -> Callable[[Request], Response]:
    def answer(request: Request) -> Response:
        return FileResponse(STATIC / name)

    return answer


def _first_page(api: Api) -> Callable[[Request], Response]:
    """`GET /`: the page with the run's state in it (app.js then goes live over it)."""

    def answer(request: Request) -> Response:
        return HTMLResponse(render_page(api.first_state()))

    return answer


def create_app(root: Path, run: str | None, hosts: frozenset[str]) -> ASGIApp:
    """The ASGI app for the repository at `root`, answering only requests naming `hosts`."""
    paths, repo = RunnerPaths(root), Repo(root)
    api = Api(paths, repo, run)
    broker = Broker()
    watcher = Watcher(paths, repo, api, broker)

    async def events(request: Request) -> Response:
        return StreamingResponse(
            client_messages(broker, request.is_disconnected),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(watcher.run_forever())
        try:
            yield
        finally:
            watcher.stop.set()
            task.cancel()

    endpoints: dict[str, Callable[[Request], Response]] = {
        "/api/status": api.status,
        "/api/overview": api.overview,
        "/api/history": api.history,
        "/api/report": api.report,
        "/api/runs": api.runs,
        "/metrics": api.metrics,
        "/api/iterations/{number}": api.iteration,
        "/api/iterations/{number}/diff": api.iteration_diff,
        "/api/iterations/{number}/files/{name}": api.iteration_file,
        "/api/nodes/{node_id}": api.node,
    }
    routes = [Route("/", _first_page(api), methods=["GET", "HEAD"])]
    routes += [Route(path, _page(name), methods=["GET", "HEAD"]) for path, name in PAGES.items()]
    routes += [Route(p, _guarded(e), methods=["GET", "HEAD"]) for p, e in endpoints.items()]
    routes.append(Route("/api/events", events, methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.broker = broker
    return HostGuard(app, hosts)


def serve(root: Path, host: str, port: int, run: str | None) -> None:
    """Serve until interrupted; warns when the host is reachable from other machines.
    Port 0 picks a free port; the line printed names the real one."""
    if not is_loopback(host):
        print(
            f"runner: warning: serving on {host}: anyone who can reach this machine can read "
            "the run (its tree, prompts, logs); use the default 127.0.0.1 unless you mean it",
            file=sys.stderr,
        )
    listening = listening_socket(host, port)
    port = listening.getsockname()[1]
    hosts = allowed_hosts(host, port, socket.gethostname())
    print(f"serve: http://{url_host(host)}:{port}/ (read-only; Ctrl-C stops)", flush=True)
    app = create_app(root, run, hosts)
    # Open event streams never end by themselves: give them a second, then close them.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[listening])
