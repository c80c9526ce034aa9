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
    key_file = _path("executor.key_file", section.get("key_file", defaults.key_file))
    if kind == "temporal" and not key_file:
        raise ConfigError(
            "executor.key_file",
            "must name the key jobs are sealed with (make one: runner workers --new-key PATH)",
        )
    tls_cert = _path("executor.tls_cert", section.get("tls_cert", defaults.tls_cert))
    tls_key = _path("executor.tls_key", section.get("tls_key", defaults.tls_key))
    if bool(tls_cert) != bool(tls_key):
        missing = "executor.tls_key" if tls_cert else "executor.tls_cert"
        raise ConfigError(missing, "must be set with its pair: a client certificate and its key")
    return ExecutorConfig(
        key_file=key_file,
        tls=_flag("executor.tls", section.get("tls", defaults.tls)),
        tls_ca=_path("executor.tls_ca", section.get("tls_ca", defaults.tls_ca)),
        tls_cert=tls_cert,
        tls_key=tls_key,
        rejudge=_flag("executor.rejudge", section.get("rejudge", defaults.rejudge)),
        heartbeat_secs=_heartbeat_secs(section.get("heartbeat_secs", defaults.heartbeat_secs)),
        remote=remote,
        kind=kind,
        address=address,
        namespace=_name("executor.namespace", section.get("namespace", defaults.namespace)),
        task_queue=_name("executor.task_queue", section.get("task_queue", defaults.task_queue)),
    )


def _path(key: str, value: Any) -> str:
    """An absolute path (or one under `~`), or "" for none: never one inside the repository
    the agent works on by accident of the loop's working directory."""
    if value == "":
        return ""
    path = _name(key, value)
    if not (path.startswith("/") or path == "~" or path.startswith("~/")):
        raise ConfigError(key, f"must be an absolute path (or ~/...), got {value!r}")
    return path


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(key, f"must be true or false, got {value!r}")
    return value


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
        + _optional_lines(executor)
    )


def _optional_lines(executor: ExecutorConfig) -> str:
    """The keys past the first six, each written only when it is not its default."""
    defaults = ExecutorConfig()
    lines = []
    for name in ("key_file", "tls", "tls_ca", "tls_cert", "tls_key", "rejudge"):
        value = getattr(executor, name)
        if value == getattr(defaults, name):
            continue
        shown = ("true" if value else "false") if isinstance(value, bool) else _toml_string(value)
        lines.append(f"{name} = {shown}\n")
    return "".join(lines)


def _toml_string(value: str) -> str:
    # Printable only (parse_executor): a JSON string is then a valid TOML basic string.
    return json.dumps(value, ensure_ascii=False)
