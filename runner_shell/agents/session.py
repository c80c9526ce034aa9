"""Which backend runs an agent session, by its `[agent] backend` name.

The shell's table of backends: one class per name of runner_core.backends.registry, and no
other (a test holds the two tables to the same names). Each class runs its CLI and reports what
it left (runner_shell.agents._common); never decides whether the session succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from runner_core.backends.registry import backend_names
from runner_shell.agents._common import AgentBackend, AgentRequest, AgentRun
from runner_shell.agents.claude import ClaudeBackend
from runner_shell.agents.codex import CodexBackend
from runner_shell.agents.command import CommandBackend
from runner_shell.agents.copilot import CopilotBackend
from runner_shell.agents.gemini import GeminiBackend
from runner_shell.agents.opencode import OpencodeBackend
from runner_shell.agents.qwen import QwenBackend

__all__ = ["AGENT_BACKENDS", "AgentBackend", "AgentRequest", "AgentRun", "backend_for"]

# Each backend class, by the name it has in config.toml.
AGENT_BACKENDS: Mapping[str, Callable[[tuple[str, ...]], AgentBackend]] = MappingProxyType(
    {
        backend.name: backend
        for backend in (
            CodexBackend,
            ClaudeBackend,
            GeminiBackend,
            QwenBackend,
            OpencodeBackend,
            CopilotBackend,
            CommandBackend,
        )
    }
)


def backend_for(backend: str, command: tuple[str, ...]) -> AgentBackend:
    """The backend named by `[agent] backend`, running `[agent] command` (a prefix for CLIs)."""
    if backend not in AGENT_BACKENDS:
        raise ValueError(f"unknown agent backend {backend!r} (one of {backend_names()})")
    return AGENT_BACKENDS[backend](tuple(command))
