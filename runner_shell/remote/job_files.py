"""What a remote job and its coordinator agree on: names, the request, the result, its commits.

A job's request names its run, iteration and start commit (and, when its node's previous
attempt's files carry over, the commit its checkout starts from: the start commit with those
files), and carries its facts (wire.py). The coordinator pushes each commit a job starts from
to `refs/runner/bases/<run>/<commit>` on the shared remote, and the worker pushes its answer
to `refs/runner/jobs/<run>/<iter>`: a commit of the iteration's files (its parent: the start
commit with the agent's changes, which brings their blobs along). Both documents are
canonical JSON, checked field by field when read back (docs/temporal.md).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from contextvars import ContextVar

import attrs

from runner_core.json_text import json_value
from runner_shell.remote.errors import JobRefused

REQUEST_KIND = "runner-job"
RESULT_KIND = "runner-job-result"
EVENTS_FILE = "events.wire.json"  # beside the iteration's files in the result commit
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ATTEMPT = re.compile(r"[0-9]{1,9}(-[0-9A-Za-z-]{1,64})?")


def job_id(run_id: str, iteration: int, base: str) -> str:
    """The job's id on the executor: one job per run, iteration and start commit, never run
    twice (a copy of the repository reusing the run's id starts from other commits)."""
    return f"runner-{run_id}-{iteration}-{base[:16]}"


def base_ref(run_id: str, base: str) -> str:
    """Where a commit a job starts from (its start commit, or the checkout's start) waits for
    workers on the shared remote: one ref per commit, pushed once for every job it serves."""
    return f"refs/runner/bases/{run_id}/{base}"


def result_ref(run_id: str, iteration: int, attempt: str) -> str:
    """Where one attempt of a job leaves its answer: a ref of its own, so an attempt that lost
    its job (its worker cut off, the job handed to another) never writes over the answer the
    loop takes, which names its attempt."""
    return f"refs/runner/jobs/{run_id}/{iteration}/{attempt}"


# The attempt running a job in this thread: `<Temporal's attempt number>-<workflow run id>`
# (a job submitted again after it failed is another workflow run), set by the transport.
JOB_ATTEMPT: ContextVar[str] = ContextVar("runner_job_attempt", default="1")


@attrs.frozen(slots=True)
class JobRequest:
    """What a worker needs: the job, its start commit and its facts (encoded). `start`: the
    commit the agent's checkout starts from when it is not `base` (`base` with the files of
    the node's previous attempt carried onto it, a commit whose only parent is `base`); the
    job's changes are still made from `base`. A request without it (written before it was
    one of its fields) starts from `base`."""

    run_id: str
    iteration: int
    base: str
    facts: str  # wire.dumps of the job's IterationFacts
    deadline_secs: float
    heartbeat_secs: float = 30.0
    start: str | None = None

    def to_json(self) -> str:
        return _canonical({"kind": REQUEST_KIND, **attrs.asdict(self)})

    @classmethod
    def from_json(cls, text: str) -> JobRequest:
        found = _document(text, REQUEST_KIND)
        return cls(
            run_id=_run_id(found),
            iteration=_positive(found, "iteration"),
            base=_sha(found, "base"),
            facts=_text(found, "facts"),
            deadline_secs=_number(found, "deadline_secs"),
            heartbeat_secs=_number(found, "heartbeat_secs"),
            start=_start(found),
        )


@attrs.frozen(slots=True)
class JobResult:
    """A worker's answer: its job, the commit it pushed, its machine at the merge (encoded),
    what the changed paths were at the start commit, and how long it took there."""

    run_id: str
    iteration: int
    base: str
    commit: str
    machine: str  # wire.dumps of the IterationMachine stopped where the merge queue goes on
    base_entries: tuple[tuple[str, str, str], ...] | None  # (path, mode, oid) at the base
    elapsed_secs: float
    worker: str  # the worker's --identity
    attempt: str = "1"  # which attempt answered: its ref is result_ref(..., attempt)

    def to_json(self) -> str:
        document = attrs.asdict(self)
        return _canonical({"kind": RESULT_KIND, **document})

    @classmethod
    def from_json(cls, text: str) -> JobResult:
        found = _document(text, RESULT_KIND)
        entries = found.get("base_entries")
        return cls(
            run_id=_run_id(found),
            iteration=_positive(found, "iteration"),
            base=_sha(found, "base"),
            commit=_sha(found, "commit"),
            machine=_text(found, "machine"),
            base_entries=None if entries is None else _entries(entries),
            elapsed_secs=_number(found, "elapsed_secs"),
            worker=_text(found, "worker"),
            attempt=_attempt(found),
        )


def _canonical(document: Mapping[str, object]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _document(text: str, kind: str) -> dict[str, object]:
    try:
        found = json_value(text)
    except ValueError:
        raise JobRefused(f"a {kind} document that is not JSON") from None
    if not isinstance(found, dict) or found.get("kind") != kind:
        raise JobRefused(f"not a {kind} document")
    return found


def _field(found: Mapping[str, object], name: str, ok: bool, what: str) -> None:
    if not ok:
        raise JobRefused(f"{found.get('kind')}: {name} must be {what}")


def _text(found: Mapping[str, object], name: str) -> str:
    value = found.get(name)
    _field(found, name, isinstance(value, str), "a string")
    assert isinstance(value, str)
    return value


def _sha(found: Mapping[str, object], name: str) -> str:
    value = _text(found, name)
    _field(found, name, _SHA.fullmatch(value) is not None, "a commit id")
    return value


def _start(found: Mapping[str, object]) -> str | None:
    if found.get("start") is None:
        return None
    start = _sha(found, "start")
    _field(found, "start", start != found.get("base"), "another commit than base, or null")
    return start


def _run_id(found: Mapping[str, object]) -> str:
    value = _text(found, "run_id")
    _field(found, "run_id", _RUN_ID.fullmatch(value) is not None, "a run id")
    return value


def _attempt(found: Mapping[str, object]) -> str:
    value = _text(found, "attempt")
    _field(found, "attempt", _ATTEMPT.fullmatch(value) is not None, "an attempt name")
    return value


def _positive(found: Mapping[str, object], name: str) -> int:
    value = found.get(name)
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    _field(found, name, ok, "a positive integer")
    assert isinstance(value, int)
    return value


def _number(found: Mapping[str, object], name: str) -> float:
    value = found.get(name)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    _field(found, name, ok, "a number of seconds")
    assert isinstance(value, int | float)
    return float(value)


def _entries(value: object) -> tuple[tuple[str, str, str], ...]:
    ok = isinstance(value, list) and all(
        isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
        for item in value
    )
    if not ok:
        raise JobRefused(f"{RESULT_KIND}: base_entries must be a list of [path, mode, oid]")
    assert isinstance(value, list)
    return tuple((str(path), str(mode), str(oid)) for path, mode, oid in value)


# A job's deadline and heartbeat when its request names none (docs/temporal.md).
DEFAULT_DEADLINE_SECS = 3600.0
DEFAULT_HEARTBEAT_SECS = 30.0


def job_timing(request_json: str) -> tuple[float, float]:
    """A request's `deadline_secs` and `heartbeat_secs`, each its default when absent or not a
    positive finite number (the request is otherwise opaque here)."""
    try:
        request = json_value(request_json)
    except ValueError:
        request = None
    fields = request if isinstance(request, dict) else {}
    return (
        _positive_secs(fields.get("deadline_secs"), DEFAULT_DEADLINE_SECS),
        _positive_secs(fields.get("heartbeat_secs"), DEFAULT_HEARTBEAT_SECS),
    )


def _positive_secs(value: object, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value) if value > 0 and math.isfinite(value) else default
