"""`[executor]`: where a parallel run's leaf jobs run, on this machine or through Temporal.

Decides whether the table's values are valid and what the default is (`kind = "local"`, every
Temporal key at its default, and the table left out of a written config). Never connects to
anything: docs/temporal.md describes what the shell does with `kind = "temporal"`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import toml_line

MAX_PORT = 65535

# `[executor] kind`: the values of schemas/config.schema.json's enum.
ExecutorKind = Literal["local", "temporal"]


@attrs.frozen(slots=True)
class ExecutorConfig:
    """`[executor]`: `kind` "local" runs jobs in this process's threads; "temporal" hands each
    to a worker polling `task_queue` of `namespace` on the Temporal server at `address`."""

    kind: ExecutorKind = "local"
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "runner"
    remote: str = ""  # the git URL the loop and its workers share; needed by "temporal"
    # How long a worker may go silent before its job is handed to another.
    heartbeat_secs: int = 30
    # The key requests and results are sealed with (`runner workers --new-key PATH`): an
    # absolute path outside the repository; needed by "temporal".
    key_file: str = ""
    # TLS to the server: on when `tls` or any path is set; a client certificate and its key
    # (mTLS) come together; `tls_ca` is the root the server's certificate is checked against.
    tls: bool = False
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    # The guard of a job's answer run again here before a remote pass counts.
    rejudge: bool = False

    @property
    def uses_tls(self) -> bool:
        return self.tls or bool(self.tls_ca or self.tls_cert or self.tls_key)


# Jobs in this process's threads, the Temporal keys at their defaults.
LOCAL_EXECUTOR = ExecutorConfig()


def _printable(key: str, value: str) -> str:
    if any(not character.isprintable() for character in value):
        raise ConfigError(key, f"must hold printable characters only, got {value!r}")
    return value


def address_problem(address: str) -> str | None:
    """Why `address` is no `HOST:PORT`, or None when it is one."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or any(character.isspace() for character in address):
        return f"must be HOST:PORT, got {address!r}"
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
        return f"must end in a port between 1 and {MAX_PORT}, got {address!r}"
    return None


def parse_executor(section: Mapping[str, Any]) -> ExecutorConfig:
    """`[executor]` from parsed TOML, defaults for what it leaves out."""
    executor = attrs.evolve(LOCAL_EXECUTOR, **section)
    for key in ("address", "namespace", "task_queue", "remote", *_PATHS):
        _printable(f"executor.{key}", getattr(executor, key))
    problem = address_problem(executor.address)
    if problem is not None:
        raise ConfigError("executor.address", problem)
    if executor.kind == "temporal" and not executor.remote:
        raise ConfigError("executor.remote", "must be a non-empty string, got ''")
    if executor.kind == "temporal" and not executor.key_file:
        raise ConfigError(
            "executor.key_file",
            "must name the key jobs are sealed with (make one: runner workers --new-key PATH)",
        )
    if bool(executor.tls_cert) != bool(executor.tls_key):
        missing = "executor.tls_key" if executor.tls_cert else "executor.tls_cert"
        raise ConfigError(missing, "must be set with its pair: a client certificate and its key")
    return executor


# The keys that hold a path: absolute or under `~` (the schema's), never one inside the
# repository the agent works on by accident of the loop's working directory; "" for none.
_PATHS = ("key_file", "tls_ca", "tls_cert", "tls_key")


def render_executor_table(executor: ExecutorConfig) -> str:
    """The `[executor]` table, written only when it differs from the default; its keys past
    the first six only when they are not their defaults."""
    if executor == LOCAL_EXECUTOR:
        return ""
    return (
        "\n[executor]\n"
        + toml_line("kind", executor.kind, '"local" | "temporal"; see docs/temporal.md')
        + toml_line("address", executor.address, "the Temporal server, HOST:PORT")
        + toml_line("namespace", executor.namespace)
        + toml_line("task_queue", executor.task_queue, "the queue `runner worker` polls")
        + toml_line("remote", executor.remote, "the git URL the loop and workers share")
        + toml_line(
            "heartbeat_secs", executor.heartbeat_secs, "a silent worker's job goes to another"
        )
        + "".join(
            toml_line(name, getattr(executor, name))
            for name in ("key_file", "tls", "tls_ca", "tls_cert", "tls_key", "rejudge")
            if getattr(executor, name) != getattr(LOCAL_EXECUTOR, name)
        )
    )
