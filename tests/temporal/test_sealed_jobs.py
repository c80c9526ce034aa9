"""Jobs and answers cross Temporal sealed (docs/temporal.md, "Sealed"): the server, and anyone
who reaches it, sees ciphertext; a worker runs nothing of a job it cannot open, the loop takes
no answer it cannot open; a key file is 0600, never overwritten, refused when others may read
it; TLS settings are read and checked before anything connects."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.worker import Worker

from runner_shell.errors import UserFacingError
from runner_shell.remote.errors import JobFailed, TemporalUnavailable
from runner_shell.remote.keys import (
    CONFIG_TLS_NAMES,
    KEY_PREFIX,
    OPTION_TLS_NAMES,
    TLSFiles,
    key_of,
    new_key_file,
    read_key_file,
    read_tls_files,
)
from runner_shell.remote.sealing import SealError, SealingCodec
from runner_shell.remote.temporal import TemporalExecutor
from runner_shell.remote.worker_job import run_job
from runner_shell.remote.worker_rules import WorkerRules
from tests.temporal.conftest import TemporalServer
from tests.temporal.forged import forged_request
from tests.temporal.workers import TEST_KEY, executor, new_queue, shouting_job, worker_thread

OTHER_KEY = key_of(b"\x07" * 32)
# How long a forged job is given to run (it must not) before the test looks.
FORGED_SECS = 6.0


def _history(address: str, workflow_id: str) -> list[object]:
    async def fetch() -> list[object]:
        client = await Client.connect(address)  # a plain client: no key, no codec
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        return list(history.events)

    return asyncio.run(fetch())


def _start_plain(address: str, queue: str, workflow_id: str, request_json: str) -> None:
    async def start() -> None:
        client = await Client.connect(address)
        await client.start_workflow("RunnerJob", request_json, id=workflow_id, task_queue=queue)

    asyncio.run(start())


def test_the_server_holds_a_request_and_its_answer_as_ciphertext(
    temporal_server: TemporalServer,
) -> None:
    queue = new_queue()
    secret = "the agent's prompt, which only the loop and its workers may read"
    with (
        worker_thread(temporal_server.address, queue, shouting_job),
        executor(temporal_server.address, queue) as coordinator,
    ):
        coordinator.submit("sealed-1", f'{{"text": "{secret}"}}')
        answer = coordinator.result("sealed-1", 30)

    assert secret.upper() in answer
    events = _history(temporal_server.address, "sealed-1")
    payloads: list[Payload] = []
    for event in events:
        for attributes in (
            event.workflow_execution_started_event_attributes,  # type: ignore[attr-defined]
            event.activity_task_scheduled_event_attributes,  # type: ignore[attr-defined]
            event.activity_task_completed_event_attributes,  # type: ignore[attr-defined]
            event.workflow_execution_completed_event_attributes,  # type: ignore[attr-defined]
        ):
            found = getattr(attributes, "input", None) or getattr(attributes, "result", None)
            payloads.extend(found.payloads if found is not None else ())
    assert len(payloads) >= 4  # the request and the answer, each at the workflow and activity
    for payload in payloads:
        assert payload.metadata["encoding"] == b"binary/runner-sealed"
        assert payload.metadata["runner-key-id"] == TEST_KEY.key_id.encode()
        assert secret.encode() not in payload.data and b"shout" not in payload.data
        assert secret.upper().encode() not in payload.data


@pytest.mark.parametrize("sealed_with", [None, OTHER_KEY], ids=["plain", "another-key"])
def test_a_worker_runs_nothing_of_a_forged_job(
    temporal_server: TemporalServer, tmp_path: Path, sealed_with: object
) -> None:
    # A request read off the server, its sandbox turned off and a command
    # of its own put in, started again as a new workflow: the honest worker never opens it.
    queue = new_queue()
    marker = tmp_path / "ran"
    request = forged_request(marker).to_json()
    ran: list[str] = []

    def job(request_json: str, heartbeat: object) -> str:
        ran.append(request_json)
        rules = WorkerRules("auto")
        return run_job(tmp_path / "work", "file:///nowhere", request_json, print, rules)

    with worker_thread(temporal_server.address, queue, job):
        if sealed_with is None:
            _start_plain(temporal_server.address, queue, "forged-1", request)
        else:
            with executor(temporal_server.address, queue, OTHER_KEY) as forger:
                forger.submit("forged-1", request)
        time.sleep(FORGED_SECS)

    assert ran == [] and not marker.exists()
    kinds = [event.event_type for event in _history(temporal_server.address, "forged-1")]  # type: ignore[attr-defined]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in kinds
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds


@workflow.defn(name="RunnerJob", sandboxed=False)
class ForgedAnswer:
    """A RunnerJob answered by whoever polls its queue without the key: a plain "pass"."""

    @workflow.run
    async def run(self, request: RawValue) -> str:
        return '{"kind": "runner-job-result", "forged": true}'


def test_the_loop_takes_no_answer_it_cannot_open(temporal_server: TemporalServer) -> None:
    queue = new_queue()
    stop = threading.Event()

    async def serve() -> None:
        client = await Client.connect(temporal_server.address)
        async with Worker(client, task_queue=queue, workflows=[ForgedAnswer]):
            while not stop.is_set():
                await asyncio.sleep(0.1)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    try:
        with executor(temporal_server.address, queue) as coordinator:
            coordinator.submit("answered-by-a-forger", '{"text": "x"}')
            with pytest.raises(JobFailed, match="cannot be opened with this loop's key"):
                coordinator.result("answered-by-a-forger", 30)
    finally:
        stop.set()
        thread.join(20)


def test_a_sealed_payload_opens_only_unaltered_and_with_its_key() -> None:
    codec = SealingCodec(TEST_KEY)
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')
    [sealed] = asyncio.run(codec.encode([plain]))
    assert b"hello" not in sealed.data
    assert asyncio.run(codec.decode([sealed])) == [plain]

    altered = Payload()
    altered.CopyFrom(sealed)
    altered.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    cases = {
        "altered since it was sealed": altered,
        "not sealed with a job key": plain,
    }
    for reason, payload in cases.items():
        with pytest.raises(SealError, match=reason):
            asyncio.run(codec.decode([payload]))
    with pytest.raises(SealError, match="sealed with another key"):
        asyncio.run(SealingCodec(OTHER_KEY).decode([sealed]))
    with pytest.raises(SealError, match="nothing is sent unsealed"):
        asyncio.run(SealingCodec(None).encode([plain]))


def test_a_new_key_file_is_0600_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "job.key"
    os.umask(0o022)
    made = new_key_file(path)

    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text(encoding="ascii").startswith(f"{KEY_PREFIX} ")
    assert read_key_file(path, "--key-file") == made
    assert made.key_id not in repr(made.secret) and "secret" not in repr(made)
    with pytest.raises(UserFacingError, match="already exists; a key file is never overwritten"):
        new_key_file(path)
    assert read_key_file(path, "--key-file") == made


@pytest.mark.parametrize(
    ("mode", "text", "problem"),
    [
        (0o644, None, r"mode 0644 lets others read it; chmod 600 "),
        (0o640, None, r"mode 0640 lets others read it"),
        (0o600, "runner-key-v1 abcd\n", "not a runner key file; make one with"),
        (0o600, "hello\n", "not a runner key file"),
    ],
)
def test_a_key_file_others_may_read_or_that_is_no_key_is_refused_in_one_line(
    tmp_path: Path, mode: int, text: str | None, problem: str
) -> None:
    path = tmp_path / "job.key"
    new_key_file(path)
    if text is not None:
        path.write_text(text, encoding="ascii")
    path.chmod(mode)

    with pytest.raises(UserFacingError, match=problem) as raised:
        read_key_file(path, "executor.key_file")
    assert str(raised.value).startswith(f"executor.key_file: {path}: ")
    assert "\n" not in str(raised.value)


def test_a_missing_or_linked_key_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserFacingError, match=r"cannot be read \(No such file"):
        read_key_file(tmp_path / "none", "--key-file")
    new_key_file(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UserFacingError, match=r"cannot be read \(a symbolic link\)"):
        read_key_file(tmp_path / "link", "--key-file")


def test_tls_files_are_read_and_checked_before_anything_connects(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    (tmp_path / "junk").write_bytes(b"not a certificate")

    names = CONFIG_TLS_NAMES
    assert read_tls_files(str(pem), "", "", names) == TLSFiles(ca=pem.read_bytes())
    with pytest.raises(UserFacingError, match=r"^executor\.tls_ca: .*junk: not a PEM file$"):
        read_tls_files(str(tmp_path / "junk"), "", "", names)
    with pytest.raises(UserFacingError, match=r"^executor\.tls_key: a client certificate and"):
        read_tls_files("", str(pem), "", names)
    with pytest.raises(UserFacingError, match=r"^--tls-ca: .*none: cannot be read"):
        read_tls_files(str(tmp_path / "none"), "", "", OPTION_TLS_NAMES)


def test_tls_to_a_server_that_speaks_none_is_unavailable_in_one_line(
    temporal_server: TemporalServer,
) -> None:
    with pytest.raises(TemporalUnavailable) as raised:
        TemporalExecutor.connect(temporal_server.address, "default", "q", 5, TEST_KEY, TLSFiles())
    assert str(raised.value).startswith(f"temporal server at {temporal_server.address} is ")
    assert "\n" not in str(raised.value)
