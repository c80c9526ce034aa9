"""mTLS to the Temporal server (`[executor] tls_ca/tls_cert/tls_key`, `runner worker --tls-ca
--tls-cert --tls-key`) end to end, through a TLS front that requires a client certificate of
a throw-away CA (tests/temporal/tls_front.py: the development server speaks no TLS itself)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.e2e import PYTHON, Project, ProjectFactory
from tests.temporal.conftest import TemporalServer
from tests.temporal.remote_project import (
    LEAVES,
    Workers,
    executor_table,
    remote_project,
)
from tests.temporal.tls_front import CertificateAuthority, Front, Issued, tls_front

REFUSED_SECS = 60.0


def _client_options(authority: CertificateAuthority, issued: Issued | None) -> list[str]:
    options = ["--tls-ca", str(authority.ca)]
    if issued is not None:
        options += ["--tls-cert", str(issued.cert), "--tls-key", str(issued.key)]
    return options


@pytest.fixture
def over_mtls(
    tmp_path: Path, make_project: ProjectFactory, temporal_server: TemporalServer
) -> Iterator[tuple[Project, Workers, CertificateAuthority, Front]]:
    (tmp_path / "pki").mkdir()
    authority = CertificateAuthority(tmp_path / "pki")
    loop = authority.issue("loop", server=False)
    with tls_front(temporal_server.address, authority) as front:
        project, queue, url = remote_project(tmp_path / "remote", make_project, temporal_server)
        table = {**executor_table(project), "address": front.address, "remote": url}
        table |= {"tls_ca": str(authority.ca), "tls_cert": str(loop.cert)}
        table["tls_key"] = str(loop.key)
        project.set_config(parallel={"slots": 4}, executor=table)
        project.commit_setup("the loop reaches its server over mTLS")
        workers = Workers(project, temporal_server, queue, url)
        workers.address = front.address
        try:
            yield project, workers, authority, front
        finally:
            workers.stop()


def test_a_loop_and_its_worker_over_mtls_end_to_end(
    over_mtls: tuple[Project, Workers, CertificateAuthority, Front],
) -> None:
    project, workers, authority, front = over_mtls
    issued = authority.issue("worker-a", server=False)
    workers.start("worker-a", extra=_client_options(authority, issued))

    result = project.runner("loop", timeout=150)

    assert result.returncode == 0, result.stderr
    assert "loop: status=complete" in result.stdout
    runs = project.harness / "node_runs"
    assert {leaf: (runs / leaf).read_text() for leaf in LEAVES} == dict.fromkeys(LEAVES, "1")
    assert front.refused == 0


def _refused_worker(project: Project, workers: Workers, options: list[str]) -> str:
    """A `runner worker` with `options` for TLS: it must end, refused, in one line."""
    argv = [PYTHON, "-m", "runner_shell", "worker", "--address", workers.address]
    argv += ["--task-queue", workers.queue, "--repo-url", workers.url, "--identity", "outsider"]
    argv += ["--dir", str(project.harness.parent / "outsider"), "--key-file", str(workers.key_file)]
    ended = subprocess.run(
        [*argv, *options],
        cwd=project.harness.parent,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=REFUSED_SECS,
    )
    assert ended.returncode != 0, ended.stdout
    assert "worker: polling" not in ended.stdout
    assert "Traceback" not in ended.stderr
    [line] = ended.stderr.strip().splitlines()
    return line


def test_a_worker_without_a_client_certificate_of_the_ca_is_refused(
    over_mtls: tuple[Project, Workers, CertificateAuthority, Front],
    tmp_path: Path,
) -> None:
    project, workers, authority, front = over_mtls
    (tmp_path / "other-pki").mkdir()
    other = CertificateAuthority(tmp_path / "other-pki", "another CA")
    forged = other.issue("worker-a", server=False)

    without = _refused_worker(project, workers, _client_options(authority, None))
    # A certificate of another CA, trusting the right one for the server: refused too.
    foreign = _refused_worker(
        project, workers, [*_client_options(other, forged)[2:], "--tls-ca", str(authority.ca)]
    )

    for line in (without, foreign):
        assert f"temporal server at {front.address}" in line, line
    deadline = time.monotonic() + 5
    while front.refused < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert front.refused >= 2  # both refused at the handshake, neither reached the server
