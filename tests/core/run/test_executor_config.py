"""Specification of the `[executor]` table of config.toml.

`kind` is "local" (the default) or "temporal"; `address` is HOST:PORT (default
"127.0.0.1:7233"), `namespace` ("default") and `task_queue` ("runner") non-empty strings.
Unknown keys and bad values are errors naming the key; the default table is not written, any
other reads back unchanged.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from runner_core import Config, ConfigError, parse_config
from runner_core.run.config import render_config
from runner_core.run.executor_config import ExecutorConfig
from runner_shell.errors import UserFacingError
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config


def test_by_default_jobs_run_locally_and_the_temporal_keys_take_their_defaults() -> None:
    assert parse_config({}).executor == ExecutorConfig(
        kind="local", address="127.0.0.1:7233", namespace="default", task_queue="runner"
    )
    assert parse_config({"executor": {}}) == Config()


def test_the_default_executor_is_not_written_so_the_default_file_is_unchanged() -> None:
    assert "[executor]" not in render_config(Config())


def test_every_executor_key_may_be_set() -> None:
    table = {"kind": "temporal", "address": "tq.lan:7000", "namespace": "ci", "task_queue": "gpu"}
    table["remote"] = "git@forge:team/app.git"
    more: dict[str, object] = {"key_file": "~/.config/runner/job.key", "tls_ca": "/etc/ca.pem"}

    executor = {**table, **more, "rejudge": True}
    assert parse_config({"executor": executor}).executor == ExecutorConfig(
        kind="temporal",
        address="tq.lan:7000",
        namespace="ci",
        task_queue="gpu",
        remote="git@forge:team/app.git",
        key_file="~/.config/runner/job.key",
        tls_ca="/etc/ca.pem",
        rejudge=True,
    )


@pytest.mark.parametrize(
    "executor",
    [
        ExecutorConfig(kind="temporal", remote="/srv/app.git", key_file="/etc/runner/job.key"),
        ExecutorConfig(
            "temporal", "[::1]:7233", "ns", "q-ü", "file:///srv/app.git", 2, "~/job.key"
        ),
        ExecutorConfig(
            "temporal",
            remote="/srv/app.git",
            key_file="/k",
            tls=True,
            tls_ca="/ca.pem",
            tls_cert="/c.pem",
            tls_key="/c.key",
            rejudge=True,
        ),
        ExecutorConfig(task_queue='quoted "queue"'),
    ],
)
def test_a_rendered_executor_table_reads_back_unchanged(executor: ExecutorConfig) -> None:
    config = Config(executor=executor)

    assert parse_config(tomllib.loads(render_config(config))) == config


@pytest.mark.parametrize(
    ("table", "key", "problem"),
    [
        ({"kind": "temporal"}, "executor.remote", "must be a non-empty string, got ''"),
        (
            {"heartbeat_secs": 0},
            "executor.heartbeat_secs",
            "must be a whole number from 1 to 3600, got 0",
        ),
        (
            {"heartbeat_secs": 2.5},
            "executor.heartbeat_secs",
            "must be a whole number from 1 to 3600, got 2.5",
        ),
        (
            {"heartbeat_secs": 30.0},
            "executor.heartbeat_secs",
            "must be a whole number from 1 to 3600, got 30.0",
        ),
        ({"kind": "ssh"}, "executor.kind", 'must be "local" | "temporal", got \'ssh\''),
        ({"kind": 1}, "executor.kind", 'must be "local" | "temporal", got 1'),
        ({"address": "localhost"}, "executor.address", "must be HOST:PORT, got 'localhost'"),
        ({"address": ":7233"}, "executor.address", "must be HOST:PORT, got ':7233'"),
        (
            {"address": "host:70000"},
            "executor.address",
            "must end in a port between 1 and 65535, got 'host:70000'",
        ),
        ({"address": "host:x"}, "executor.address", "must end in a port between 1 and 65535"),
        ({"address": 7233}, "executor.address", "must be a non-empty string, got 7233"),
        ({"namespace": ""}, "executor.namespace", "must be a non-empty string, got ''"),
        ({"task_queue": "a\nb"}, "executor.task_queue", "must hold printable characters only"),
        ({"queue": "runner"}, "executor.queue", "unknown key"),
        (
            {"kind": "temporal", "remote": "/r.git"},
            "executor.key_file",
            "must name the key jobs are sealed with (make one: runner workers --new-key PATH)",
        ),
        ({"key_file": "job.key"}, "executor.key_file", "must be an absolute path (or ~/...)"),
        ({"tls_ca": "ca.pem"}, "executor.tls_ca", "must be an absolute path"),
        ({"tls_cert": "/c.pem"}, "executor.tls_key", "must be set with its pair"),
        ({"tls_key": "/c.key"}, "executor.tls_cert", "must be set with its pair"),
        ({"tls": "yes"}, "executor.tls", "must be true or false, got 'yes'"),
        ({"rejudge": 1}, "executor.rejudge", "must be true or false, got 1"),
    ],
)
def test_a_bad_executor_value_is_an_error_naming_its_key(
    table: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"executor": table})

    assert raised.value.key == key
    assert raised.value.problem.startswith(problem)


def test_an_executor_that_is_no_table_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^executor: must be a table$"):
        parse_config({"executor": "temporal"})


def test_a_bad_executor_in_the_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    paths = RunnerPaths(tmp_path)
    paths.config.parent.mkdir(parents=True)
    paths.config.write_text('[executor]\nkind = "docker"\n', encoding="utf-8")

    with pytest.raises(UserFacingError) as raised:
        load_config(paths)

    assert str(raised.value) == (
        f'{paths.relative(paths.config)}: executor.kind: must be "local" | "temporal", '
        "got 'docker'"
    )
