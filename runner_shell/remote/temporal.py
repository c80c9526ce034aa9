"""The Temporal transport (docs/temporal.md): the `RunnerJob` workflow, the coordinator's
`TemporalExecutor` and the worker's `serve_jobs`.

Decides how a job's request reaches a worker and its result comes back: one workflow per job,
its id the job's; one activity that Temporal retries until some worker finishes it; heartbeats
that tell a lost worker. The only module importing temporalio; what a job does is the caller's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import os
import socket
import threading
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

# The workflow sandbox re-imports this module; what it needs beyond the standard library is
# the same module as outside it.
with workflow.unsafe.imports_passed_through():
    import attrs
    from temporalio.api.enums.v1 import PendingActivityState, TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client, WorkflowFailureError
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import ApplicationError, FailureError, WorkflowAlreadyStartedError
    from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
    from temporalio.service import RPCError, RPCStatusCode

    from runner_shell.remote.errors import (
        JobFailed,
        JobRefused,
        TemporalRefused,
        TemporalUnavailable,
    )
    from runner_shell.remote.job_files import DEFAULT_HEARTBEAT_SECS, JOB_ATTEMPT, job_timing
    from runner_shell.remote.keys import JobKey, TLSFiles
    from runner_shell.remote.live_events import JobProgress
    from runner_shell.remote.sealing import SealError, sealing_converter, tls_config

JOB_ACTIVITY = "runner_job"
REFUSED_TYPE = "RunnerJobRefused"
# A lost worker's job is tried again on another for as long as the workflow lives: no limit on
# attempts (0), only on the wait between them. A refused job is never tried again.
JOB_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=0,
    non_retryable_error_types=[REFUSED_TYPE],
)
# The answers by which a server refuses a call for good: any other failure of a call is the
# server not reached (waited out), whatever the transport says.
DEFINITE_REFUSALS = frozenset(
    {
        RPCStatusCode.NOT_FOUND,  # an unknown namespace
        RPCStatusCode.PERMISSION_DENIED,
        RPCStatusCode.UNAUTHENTICATED,
        RPCStatusCode.INVALID_ARGUMENT,
        RPCStatusCode.UNIMPLEMENTED,
    }
)
# The longest a look at a running job or a submission (idempotent) waits: the SDK retries a
# call on a lost link for longer; the loop says the server is away then, not once it is back.
LOOK_SECS = 3.0
# How long past a call's own deadline the calling thread waits for the event loop to answer.
LOOP_GRACE_SECS = 5.0
# How long a stopping worker lets running jobs finish before Temporal cancels them.
SHUTDOWN_GRACE_SECS = 10.0
# The longest a job's new heartbeat details wait on its worker before they reach the server
# (the SDK's own default is most of the heartbeat timeout): the loop shows them live.
HEARTBEAT_THROTTLE_SECS = 1.0

Job = Callable[[str, Callable[[str], None]], str]
T = TypeVar("T")


@workflow.defn(name="RunnerJob")
class RunnerJob:
    """One job: its request handed to the `runner_job` activity on this workflow's task queue,
    the activity's result returned."""

    @workflow.run
    async def run(self, request_json: str) -> str:
        deadline_secs, heartbeat_secs = job_timing(request_json)
        result: str = await workflow.execute_activity(
            JOB_ACTIVITY,
            request_json,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=deadline_secs),
            heartbeat_timeout=timedelta(seconds=heartbeat_secs),
            retry_policy=JOB_RETRY,
        )
        return result


# ---------------------------------------------------------------- the coordinator's side


@attrs.frozen(slots=True)
class WorkerSeen:
    """A worker polling the task queue: its identity and when the server last heard it (UTC)."""

    identity: str
    last_access: datetime


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


@functools.cache
def _quiet_runtime() -> Runtime:
    """The SDK's runtime, its own log at errors only: a server away for a while is the loop's
    to say, in one line, not the SDK's to say at every retry."""
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))


async def _connect(
    address: str,
    namespace: str,
    key: JobKey | None,
    tls: TLSFiles | None,
    identity: str | None = None,
) -> Client:
    try:
        return await Client.connect(
            address,
            namespace=namespace,
            identity=identity,
            runtime=_quiet_runtime(),
            data_converter=sealing_converter(key),
            tls=False if tls is None else tls_config(tls),
        )
    except Exception as error:
        raise TemporalUnavailable(address, _first_line(error)) from None


def _failure_reason(error: BaseException) -> str:
    """The innermost cause's message: what the job said, not Temporal's wrappers around it."""
    while error.__cause__ is not None:
        error = error.__cause__
    if isinstance(error, FailureError) and error.message.strip():
        return error.message.strip().splitlines()[0]
    return _first_line(error)


class TemporalExecutor:
    """Jobs handed to Temporal from plain threads: each call runs on one event loop in a daemon
    thread of its own and waits at most its deadline."""

    def __init__(
        self,
        client: Client,
        loop: asyncio.AbstractEventLoop,
        thread: threading.Thread,
        address: str,
        task_queue: str,
        timeout_secs: float,
    ) -> None:
        self._client, self._loop, self._thread = client, loop, thread
        self.address = address
        self.task_queue = task_queue
        self._timeout_secs = timeout_secs

    @classmethod
    def connect(
        cls,
        address: str,
        namespace: str,
        task_queue: str,
        timeout_secs: float,
        key: JobKey | None = None,
        tls: TLSFiles | None = None,
    ) -> TemporalExecutor:
        """Connect to the server at `address`; `timeout_secs` bounds this and every later call
        but `result` (a submission and a look at a job wait at most LOOK_SECS). Requests are
        sealed and results opened with `key` (without one, only `workers` works). Raises
        TemporalUnavailable when the server does not answer in time."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="temporal-client", daemon=True)
        thread.start()
        try:
            client = _on_loop(loop, _connect(address, namespace, key, tls), timeout_secs)
        except BaseException as error:
            _stop_loop(loop, thread)
            if isinstance(error, TimeoutError):
                raise TemporalUnavailable(address, f"no answer in {timeout_secs:g} s") from None
            raise
        return cls(client, loop, thread, address, task_queue, timeout_secs)

    def submit(self, job_id: str, request_json: str) -> None:
        """Start job `job_id`'s workflow, or attach to it when it is running or has finished
        with a result already: a job id runs once."""
        self._rpc(self._start(job_id, request_json), min(self._timeout_secs, LOOK_SECS))

    def result(self, job_id: str, timeout_secs: float) -> str:
        """Job `job_id`'s result, waiting at most `timeout_secs` (then TimeoutError); raises
        JobFailed with the job's one-line reason when its workflow failed."""
        try:
            return _on_loop(self._loop, self._result(job_id), timeout_secs)
        except TimeoutError:
            raise TimeoutError(f"job {job_id}: no result in {timeout_secs:g} s") from None
        except (JobFailed, SealError):
            raise
        except Exception as error:
            raise self._unreached(error) from None

    def workers(self) -> tuple[WorkerSeen, ...]:
        """The workers polling the task queue, by identity."""
        return self._rpc(self._pollers())

    def progress(self, job_id: str) -> JobProgress | None:
        """Job `job_id`'s activity while it is pending: the worker running it now and its last
        heartbeat's details; None when nothing is pending (not started, or finished)."""
        return self._rpc(self._progress(job_id), min(self._timeout_secs, LOOK_SECS))

    def cancel(self, job_id: str) -> bool:
        """Ask the server to cancel job `job_id`'s workflow (its worker stops the job at its
        next heartbeat); False when it is not running, so an answer it has is there to take."""
        return self._rpc(self._cancel(job_id))

    def close(self) -> None:
        _stop_loop(self._loop, self._thread)

    def __enter__(self) -> TemporalExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _rpc(self, call: Coroutine[Any, Any, T], timeout_secs: float | None = None) -> T:
        deadline = self._timeout_secs if timeout_secs is None else timeout_secs
        try:
            return _on_loop(self._loop, call, deadline)
        except TimeoutError:
            raise TemporalUnavailable(self.address, f"no answer in {deadline:g} s") from None
        except (JobFailed, SealError):
            raise
        except Exception as error:
            raise self._unreached(error) from None

    def _unreached(self, error: Exception) -> TemporalUnavailable | TemporalRefused:
        """What a failed call means: a definite refusal by the server (an unknown namespace, a
        denied call) ends the loop; anything else (the link cut, a call in flight across a
        heal, a transport error) is the server not reached, waited out."""
        if isinstance(error, RPCError) and error.status in DEFINITE_REFUSALS:
            return TemporalRefused(self.address, _first_line(error))
        return TemporalUnavailable(self.address, _first_line(error))

    async def _start(self, job_id: str, request_json: str) -> None:
        try:
            await self._client.start_workflow(
                RunnerJob.run,
                request_json,
                id=job_id,
                task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                # A job that failed may be submitted again; one that succeeded keeps its result.
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            )
        except WorkflowAlreadyStartedError:
            return

    async def _result(self, job_id: str) -> str:
        handle = self._client.get_workflow_handle(job_id, result_type=str)
        try:
            result: str = await handle.result()
        except SealError as error:
            raise JobFailed(
                job_id, f"its answer cannot be opened with this loop's key: {error}"
            ) from None
        except WorkflowFailureError as error:
            raise JobFailed(job_id, _failure_reason(error)) from None
        except RPCError as error:
            if error.status is RPCStatusCode.NOT_FOUND:
                raise JobFailed(job_id, "no such job on the server") from None
            raise
        return result

    async def _cancel(self, job_id: str) -> bool:
        try:
            await self._client.get_workflow_handle(job_id).cancel()
        except RPCError as error:
            if error.status is not RPCStatusCode.NOT_FOUND:  # NOT_FOUND: closed, or no such job
                raise
            return False
        return True

    async def _progress(self, job_id: str) -> JobProgress | None:
        try:
            described = await self._client.get_workflow_handle(job_id).describe()
        except RPCError as error:
            if error.status is RPCStatusCode.NOT_FOUND:
                return None
            raise
        for pending in described.raw_description.pending_activities:
            running = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            # A scheduled activity's last worker is the one that lost it, not who runs it.
            worker = pending.last_worker_identity if running else ""
            try:
                said = await self._client.data_converter.decode(pending.heartbeat_details.payloads)
            except SealError:  # not from a worker holding the key: nothing to show
                said = []
            details = said[-1] if said and isinstance(said[-1], str) else None
            return JobProgress(worker or None, details)
        return None

    async def _pollers(self) -> tuple[WorkerSeen, ...]:
        seen: dict[str, datetime] = {}
        for queue_type in (
            TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        ):
            request = DescribeTaskQueueRequest(
                namespace=self._client.namespace,
                task_queue=TaskQueue(name=self.task_queue),
                task_queue_type=queue_type,
            )
            response = await self._client.workflow_service.describe_task_queue(request)
            for poller in response.pollers:
                at = poller.last_access_time.ToDatetime(tzinfo=UTC)
                seen[poller.identity] = max(at, seen.get(poller.identity, at))
        return tuple(WorkerSeen(identity, at) for identity, at in sorted(seen.items()))


def _on_loop(
    loop: asyncio.AbstractEventLoop, call: Coroutine[Any, Any, T], timeout_secs: float
) -> T:
    """Run `call` on `loop` (another thread's) and wait for it at most `timeout_secs`."""
    future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(call, timeout_secs), loop)
    try:
        return future.result(timeout_secs + LOOP_GRACE_SECS)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError from None


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(LOOP_GRACE_SECS)
    if not thread.is_alive():
        loop.close()


# ---------------------------------------------------------------- the worker's side


def default_identity() -> str:
    """`<hostname>:<pid>`: which machine and which process took a job."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Heartbeats:
    """A job's heartbeats: what the job reports, and the same again every `interval_secs` from
    a thread of its own while the job is silent, so a long quiet agent is not taken for lost."""

    def __init__(self, interval_secs: float) -> None:
        self._interval_secs = interval_secs
        self._details: tuple[str, ...] = ()
        self._lock = threading.Lock()
        self._done = threading.Event()
        # A copy of the activity's context: activity.heartbeat finds its activity through it.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._beat,), name="runner-job-heartbeat", daemon=True
        )

    def report(self, details: str) -> None:
        with self._lock:
            self._details = (details,)
            activity.heartbeat(details)

    def __enter__(self) -> _Heartbeats:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join(self._interval_secs)

    def _beat(self) -> None:
        while not self._done.wait(self._interval_secs):
            with self._lock:
                activity.heartbeat(*self._details)


def _job_activity(job: Job) -> Callable[[str], str]:
    @activity.defn(name=JOB_ACTIVITY)
    def runner_job(request_json: str) -> str:
        info = activity.info()
        timeout = info.heartbeat_timeout
        interval_secs = (timeout.total_seconds() if timeout else DEFAULT_HEARTBEAT_SECS) / 3
        JOB_ATTEMPT.set(f"{info.attempt}-{info.workflow_run_id}")
        with _Heartbeats(interval_secs) as heartbeats:
            try:
                return job(request_json, heartbeats.report)
            except JobRefused as refused:
                raise ApplicationError(
                    refused.line, type=REFUSED_TYPE, non_retryable=True
                ) from None

    return runner_job


def serve_jobs(
    address: str,
    namespace: str,
    task_queue: str,
    identity: str | None,
    slots: int,
    job: Job,
    stop: threading.Event | None,
    *,
    key: JobKey,
    tls: TLSFiles | None = None,
    on_polling: Callable[[], None] | None = None,
    connect_timeout_secs: float = 10.0,
) -> None:
    """Take jobs from `task_queue` and run each as `job(request_json, heartbeat)`, up to `slots`
    at once, until `stop` is set (forever when None); `on_polling` is told once polling starts.
    A job is opened with `key` before anything runs: one sealed with another key, or not at
    all, fails to open and runs nothing; its result is sealed with it.

    Raises TemporalUnavailable when the server at `address` does not answer.
    """
    identity = identity or default_identity()
    asyncio.run(
        _serve(
            _WorkerPlan(address, namespace, task_queue, identity, slots, key, tls),
            job,
            stop,
            on_polling,
            connect_timeout_secs,
        )
    )


@attrs.frozen(slots=True)
class _WorkerPlan:
    address: str
    namespace: str
    task_queue: str
    identity: str
    slots: int
    key: JobKey
    tls: TLSFiles | None


async def _serve(
    plan: _WorkerPlan,
    job: Job,
    stop: threading.Event | None,
    on_polling: Callable[[], None] | None,
    connect_timeout_secs: float,
) -> None:
    from temporalio.worker import Worker

    try:
        client = await asyncio.wait_for(
            _connect(plan.address, plan.namespace, plan.key, plan.tls, plan.identity),
            connect_timeout_secs,
        )
    except TimeoutError:
        reason = f"no answer in {connect_timeout_secs:g} s"
        raise TemporalUnavailable(plan.address, reason) from None
    pool = concurrent.futures.ThreadPoolExecutor(plan.slots, thread_name_prefix="runner-job")
    worker = Worker(
        client,
        task_queue=plan.task_queue,
        workflows=[RunnerJob],
        activities=[_job_activity(job)],
        activity_executor=pool,
        max_concurrent_activities=plan.slots,
        identity=plan.identity,
        max_heartbeat_throttle_interval=timedelta(seconds=HEARTBEAT_THROTTLE_SECS),
        graceful_shutdown_timeout=timedelta(seconds=SHUTDOWN_GRACE_SECS),
    )
    running = asyncio.create_task(worker.run())
    if on_polling is not None:
        on_polling()
    try:
        while not running.done() and not (stop is not None and stop.is_set()):
            await asyncio.wait({running}, timeout=0.2)
        if not running.done():
            await asyncio.wait_for(worker.shutdown(), SHUTDOWN_GRACE_SECS + LOOP_GRACE_SECS)
        await running
    finally:
        # A job that ignored its cancellation keeps its thread; the process need not wait.
        pool.shutdown(wait=False, cancel_futures=True)
