"""`runner recover` and a killed loop's job with no answer yet (`answer_now` of
runner_shell/loop/remote_recovery.py): its workflow is cancelled, so its worker stops the job
instead of running it for no one; a job that finished between the look and the cancel answers
after all; a server that cannot be reached for the cancel is said. Against a fake executor;
tests/temporal has the real server."""

from __future__ import annotations

import attrs
import pytest

from runner_shell.loop.remote_recovery import answer_now
from runner_shell.remote.errors import TemporalUnavailable
from runner_shell.remote.live_events import JobProgress

NAME = "runner-run-1-3-0123456789abcdef"


@attrs.define
class Server:
    """A job's workflow as a server keeps it: its answers to each look, in order (None: none
    yet), and whether a cancel finds it running (an exception: the server not reached)."""

    answers: list[str | None]
    running: bool | Exception = True
    cancelled: list[str] = attrs.field(factory=list)

    def submit(self, job_id: str, request_json: str) -> None:
        raise AssertionError("recover submits no job")

    def result(self, job_id: str, timeout_secs: float) -> str:
        answer = self.answers.pop(0)
        if answer is None:
            raise TimeoutError(job_id)
        return answer

    def workers(self) -> tuple[object, ...]:
        return ()

    def progress(self, job_id: str) -> JobProgress | None:
        return None

    def cancel(self, job_id: str) -> bool:
        if isinstance(self.running, Exception):
            raise self.running
        self.cancelled.append(job_id)
        return self.running

    def close(self) -> None:
        pass


def test_a_job_that_has_answered_is_taken_and_nothing_is_cancelled() -> None:
    server, said = Server(["the answer"]), list[str]()

    assert answer_now(server, NAME, said.append) == "the answer"
    assert (server.cancelled, said) == ([], [])


def test_a_job_with_no_answer_has_its_workflow_cancelled() -> None:
    server, said = Server([None]), list[str]()

    with pytest.raises(TimeoutError):
        answer_now(server, NAME, said.append)
    assert server.cancelled == [NAME]
    assert said == [f"job {NAME} cancelled: its worker stops it"]


def test_a_job_that_finished_before_the_cancel_answers_after_all() -> None:
    server, said = Server([None, "the late answer"], running=False), list[str]()

    assert answer_now(server, NAME, said.append) == "the late answer"
    assert said == []


def test_a_cancel_the_server_does_not_answer_is_said_and_the_job_not_taken() -> None:
    away = TemporalUnavailable("127.0.0.1:7233", "connection refused")
    server, said = Server([None], running=away), list[str]()

    with pytest.raises(TimeoutError):
        answer_now(server, NAME, said.append)
    assert said == [f"job {NAME} not cancelled: {away}"]
