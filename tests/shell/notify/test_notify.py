"""`[notify]` end to end: a real `runner loop` that goes stuck sends one message to a local
JSON/HTTP receiver and one e-mail to a local SMTP server; a receiver that hangs or refuses slows
the loop by at most its timeout once and is one masked line on stderr; `runner notify --test`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.e2e import Project, ProjectFactory, node
from tests.helpers.receivers import free_port, hanging_receiver, json_receiver, smtp_server

LEAF = node("root", max_attempts=1)
RETRY = {"status": "retry", "summary": "not yet"}


def _stuck_run(project: Project, **notify: Any) -> str:
    run = project.prepare(LEAF, notify=notify)
    project.agent_script({1: {"output": RETRY}})
    return run


def _mailto(port: int) -> str:
    return f"mailto://127.0.0.1:{port}?from=runner@example.org&to=op@example.org"


def test_a_stuck_loop_sends_one_message_and_one_e_mail(project: Project) -> None:
    with json_receiver() as (http_port, bodies), smtp_server() as (smtp_port, mails):
        run = _stuck_run(
            project, urls=[f"json://127.0.0.1:{http_port}/", _mailto(smtp_port)], on=["stuck"]
        )
        loop = project.runner("loop", timeout=60)
        assert loop.returncode == 3, loop.stderr
        assert "notify" not in loop.stderr

    assert len(bodies) == 1 and len(mails) == 1
    message = bodies[0]
    assert message["title"] == f"runner: run {run} is stuck at node root"
    assert f"run: {run}\nnode: root\n" in message["message"]
    assert "loop: status=stuck" in message["message"]
    assert "what to do: look at `runner history --node root`" in message["message"]
    assert f"Subject: runner: run {run} is stuck at node root" in mails[0]


def test_events_left_out_of_on_send_nothing(project: Project) -> None:
    with json_receiver() as (port, bodies):
        _stuck_run(project, urls=[f"json://127.0.0.1:{port}/"], on=["complete"])
        assert project.runner("loop", timeout=60).returncode == 3
    assert bodies == []


def _timed_stuck_loop(project: Project, **notify: Any) -> tuple[float, str]:
    _stuck_run(project, **notify)
    began = time.monotonic()
    loop = project.runner("loop", timeout=60)
    assert loop.returncode == 3, loop.stderr
    return time.monotonic() - began, loop.stderr


@pytest.mark.serial  # it compares two loops' wall times
def test_a_hanging_or_refusing_receiver_costs_the_loop_at_most_its_timeout_once(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    (tmp_path / "quiet").mkdir()
    (tmp_path / "told").mkdir()
    baseline, _ = _timed_stuck_loop(make_project(tmp_path / "quiet", "started"))
    with hanging_receiver() as hanging:
        urls = [f"json://runner:s3cret@127.0.0.1:{hanging}/", f"json://127.0.0.1:{free_port()}/"]
        told = make_project(tmp_path / "told", "started")
        slowed, stderr = _timed_stuck_loop(told, urls=urls, timeout_secs=2)
    assert slowed - baseline < 2 + 1.5, (baseline, slowed)
    assert "s3cret" not in stderr
    failures = [line for line in stderr.splitlines() if "runner: notify:" in line]
    assert failures, stderr
    assert len(failures) == len(set(failures)) <= 2  # each URL's failure said once


def test_notify_test_sends_one_message_and_never_prints_the_secret(project: Project) -> None:
    with json_receiver() as (port, bodies):
        project.prepare(LEAF, notify={"urls": [f"json://runner:s3cret@127.0.0.1:{port}/"]})
        sent = project.runner("notify", "--test")
    assert sent.returncode == 0, sent.stderr
    assert len(bodies) == 1 and "runner notify --test" in bodies[0]["message"]
    assert sent.stdout.startswith("notify: sent a test message to 1 URL(s): json://runner:")
    assert "s3cret" not in sent.stdout + sent.stderr


def test_notify_test_to_a_refusing_receiver_is_one_line_and_exit_1(project: Project) -> None:
    project.prepare(LEAF, notify={"urls": [f"json://runner:s3cret@127.0.0.1:{free_port()}/"]})
    sent = project.runner("notify", "--test")
    assert sent.returncode == 1
    assert (
        sent.stderr.count("\n") == 1 and "notify: could not send to json://runner:" in sent.stderr
    )
    assert "s3cret" not in sent.stderr


def test_notify_without_urls_says_how_to_add_one(project: Project) -> None:
    project.prepare(LEAF)
    sent = project.runner("notify", "--test")
    assert sent.returncode == 1
    assert sent.stderr == (
        'runner: notify: no [notify] urls in .runner/config.toml (add urls = ["json://host:port"], '
        "see docs/notify.md)\n"
    )
