"""Specification of a server restart: the development server stopped and started again on the
same state file and port keeps its workflows, so a finished job's result is still answered
and a job id submitted again still runs once."""

from __future__ import annotations

from tests.temporal.conftest import TemporalServer
from tests.temporal.test_transport import RESULT_SECS, CountingJob
from tests.temporal.workers import executor, new_queue, worker_thread


def test_a_finished_job_keeps_its_result_across_a_server_restart(
    temporal_server: TemporalServer,
) -> None:
    queue, job = new_queue(), CountingJob()
    with (
        worker_thread(temporal_server.address, queue, job),
        executor(temporal_server.address, queue) as coordinator,
    ):
        coordinator.submit("job-restart", "{}")
        assert coordinator.result("job-restart", RESULT_SECS) == "done 1"

    temporal_server.restart()

    with executor(temporal_server.address, queue) as coordinator:
        coordinator.submit("job-restart", "{}")
        assert coordinator.result("job-restart", RESULT_SECS) == "done 1"
    assert job.calls == 1
