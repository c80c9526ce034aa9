"""`[executor]`: where a parallel run's leaf jobs run, on this machine or through Temporal.

Decides whether the table's values are valid and what the default is (`kind = "local"`, every
Temporal key at its default, and the table left out of a written config). Never connects to
anything: docs/temporal.md describes what the shell does with `kind = "temporal"`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from runner_core.run.config_errors import ConfigError, known_keys

EXECUTOR_KINDS = ("local", "temporal")
MAX_PORT = 65535
HEARTBEAT_SECS_BOUNDS = (1, 3600)


@attrs.frozen(slots=True)
class ExecutorConfig:
    """`[executor]`: `kind` "local" runs jobs in this process's threads; "temporal" hands each
    to a worker polling `task_queue` of `namespace` on the Temporal server at `address`."""

    kind: str = "local"
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "runner"
    remote: str = ""  # the git URL the loop and its workers share; needed by "temporal"
    # How long a worker may go silent before its job is handed to another.
    heartbeat_secs: int = 30


# Jobs in this process's threads, the Temporal keys at their defaults.
LOCAL_EXECUTOR = ExecutorConfig()


def _name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a non-empty string, got {value!r}")
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
    defaults = ExecutorConfig()
    known_keys("executor", section, tuple(attrs.fields_dict(ExecutorConfig)))
    kind = section.get("kind", defaults.kind)
    if kind not in EXECUTOR_KINDS:
        choices = " | ".join(f'"{choice}"' for choice in EXECUTOR_KINDS)
        raise ConfigError("executor.kind", f"must be {choices}, got {kind!r}")
    address = _name("executor.address", section.get("address", defaults.address))
    problem = address_problem(address)
    if problem is not None:
        raise ConfigError("executor.address", problem)
    remote = section.get("remote", defaults.remote)
    if kind == "temporal" or remote != defaults.remote:
        remote = _name("executor.remote", remote)
    return ExecutorConfig(
        heartbeat_secs=_heartbeat_secs(section.get("heartbeat_secs", defaults.heartbeat_secs)),
        remote=remote,
        kind=kind,
        address=address,
        namespace=_name("executor.namespace", section.get("namespace", defaults.namespace)),
        task_queue=_name("executor.task_queue", section.get("task_queue", defaults.task_queue)),
    )


def _heartbeat_secs(value: Any) -> int:
    low, high = HEARTBEAT_SECS_BOUNDS
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            "executor.heartbeat_secs", f"must be a whole number from {low} to {high}, got {value!r}"
        )
    return value


def render_executor_table(executor: ExecutorConfig) -> str:
    """The `[executor]` table, written only when it differs from the default."""
    if executor == LOCAL_EXECUTOR:
        return ""
    return (
        "\n[executor]\n"
        f'kind = "{executor.kind}"  # "local" | "temporal"; see docs/temporal.md\n'
        f"address = {_toml_string(executor.address)}  # the Temporal server, HOST:PORT\n"
        f"namespace = {_toml_string(executor.namespace)}\n"
        f"task_queue = {_toml_string(executor.task_queue)}  # the queue `runner worker` polls\n"
        f"remote = {_toml_string(executor.remote)}  # the git URL the loop and workers share\n"
        f"heartbeat_secs = {executor.heartbeat_secs}  # a silent worker's job goes to another\n"
    )


def _toml_string(value: str) -> str:
    # Printable only (parse_executor): a JSON string is then a valid TOML basic string.
    return json.dumps(value, ensure_ascii=False)
