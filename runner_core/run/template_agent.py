"""`runner init --backend command` without `--agent`: the template agent it writes.

Decides when init writes `.runner/agent.py` (a command backend given no command) and the
argv config.toml runs it with. Never writes the file; runner_shell.setup holds its text.
"""

from __future__ import annotations

from runner_core.backends.registry import BACKENDS

TEMPLATE_AGENT_PATH = ".runner/agent.py"
TEMPLATE_AGENT_COMMAND: tuple[str, ...] = ("python3", TEMPLATE_AGENT_PATH)


def init_agent_command(backend: str, words: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The agent argv for config.toml, and whether init writes the template agent for it: a
    backend with no program of its own (`command`) given no words gets the template."""
    info = BACKENDS.get(backend)
    if info is not None and info.program is None and not words:
        return TEMPLATE_AGENT_COMMAND, True
    return words, False
