"""The shell runs exactly the backends the core registers: a backend added to one table and not
the other fails here, not in a user's loop."""

from __future__ import annotations

from runner_core.backends.registry import BACKENDS
from runner_shell.agents.session import AGENT_BACKENDS, backend_for
from runner_shell.sandbox import home_files


def test_the_shell_and_the_core_register_the_same_backend_names() -> None:
    assert sorted(AGENT_BACKENDS) == sorted(BACKENDS)


def test_each_backend_class_is_filed_under_its_own_name() -> None:
    for name in BACKENDS:
        assert backend_for(name, ("agent",)).name == name


def test_every_registered_backend_has_a_private_home_listing() -> None:
    assert {name: home_files(name) for name in BACKENDS} == {
        "codex": (".codex/config.toml", ".codex/auth.json", ".codex/AGENTS.md"),
        "claude": (
            ".claude/.credentials.json",
            ".claude/settings.json",
            ".claude/CLAUDE.md",
            ".claude.json",
        ),
        "gemini": (
            ".gemini/settings.json",
            ".gemini/oauth_creds.json",
            ".gemini/google_accounts.json",
            ".gemini/GEMINI.md",
        ),
        "qwen": (".qwen/settings.json", ".qwen/oauth_creds.json", ".qwen/QWEN.md"),
        "copilot": (".copilot/config.json", ".copilot/settings.json", ".copilot/mcp-config.json"),
        "opencode": (
            ".config/opencode/opencode.json",
            ".config/opencode/opencode.jsonc",
            ".config/opencode/AGENTS.md",
            ".local/share/opencode/auth.json",
        ),
        "command": (),
    }
