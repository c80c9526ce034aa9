"""A job's request and result read back (runner_shell/remote/job_files.py): whatever a worker or
the shared server sends, a document that is not one is refused, never an exception of its own."""

from __future__ import annotations

import pytest

from runner_shell.remote.errors import JobRefused
from runner_shell.remote.job_files import (
    DEFAULT_DEADLINE_SECS,
    DEFAULT_HEARTBEAT_SECS,
    JobRequest,
    JobResult,
    job_timing,
)

NOT_DOCUMENTS = ["[" * 100_000 + "]" * 100_000, "[]", '"job"', "{", '{"kind": "runner-job"}']


@pytest.mark.parametrize("text", NOT_DOCUMENTS)
@pytest.mark.parametrize("kind", [JobRequest, JobResult])
def test_a_document_that_is_not_a_job_document_is_refused(
    kind: type[JobRequest] | type[JobResult], text: str
) -> None:
    with pytest.raises(JobRefused):
        kind.from_json(text)


@pytest.mark.parametrize("text", NOT_DOCUMENTS)
def test_a_request_that_is_not_one_runs_on_the_default_timing(text: str) -> None:
    assert job_timing(text) == (DEFAULT_DEADLINE_SECS, DEFAULT_HEARTBEAT_SECS)
