"""Every agent backend the runner knows: the one table the set of backend names lives in.

Decides which names `[agent] backend` accepts, which one is the default, which program each
runs when `[agent] command` is empty, and which files of the operator's HOME its CLI reads
(docs/sandbox.md). Config validation, `runner init --backend` and the sandbox's private HOME
all read this table. Never runs a backend: runner_shell.agents maps each name to its class.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

import attrs

# `[agent] backend`: every name BACKENDS holds, in its order; the schema's enum.
BackendName = Literal["codex", "claude", "gemini", "qwen", "opencode", "copilot", "command"]
# `[agent] fallback`: the backends with a program of their own (all but `command`), in the order
# of the schema's enum.
FallbackBackend = Literal["claude", "codex", "copilot", "gemini", "opencode", "qwen"]

# The CLI versions the runner is verified against (`.ci/run` installs these; a test holds the two
# to the same numbers).
PINNED: Mapping[str, str] = MappingProxyType(
    {
        "codex": "0.169.0",
        "claude": "2.1.332",
        "gemini": "0.61.0",
        "qwen": "0.24.4",
        "opencode": "1.18.33",
        "copilot": "1.0.102",
    }
)


@attrs.frozen(slots=True)
class HomeFiles:
    """Files a CLI reads from one directory: `$variable` when it is set, else `directory` under
    HOME ("" is HOME itself); `variable` "" when no variable moves it."""

    variable: str
    directory: str
    names: tuple[str, ...]


@attrs.frozen(slots=True)
class BackendInfo:
    """One backend: its `name` in config.toml, the `program` it runs unless `[agent] command`
    replaces it (None: the command must name one), the `home` files its CLI reads, and the
    `sandboxed_env` variables that tell its CLI it runs in a sandbox made on purpose, the
    `env` variables of the runner's environment its CLI reads (its key, endpoint and settings:
    names, or prefixes ending in `*`; runner_core.run.environment), and the `hosts`
    ("host:port", `*.domain` allowed) its sandboxed session may reach through the egress proxy
    (runner_core.backends.egress), `[sandbox] allow_hosts` added. `install` is how an operator
    gets the CLI (`runner validate` prints it when the program is missing)."""

    name: BackendName
    program: str | None
    home: tuple[HomeFiles, ...] = ()
    sandboxed_env: tuple[tuple[str, str], ...] = ()
    env: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    install: str = ""


# In the order the config's comment lists them, the default first. Codex reads $CODEX_HOME
# (default ~/.codex); Claude Code reads $CLAUDE_CONFIG_DIR (default ~/.claude) and its global
# state .claude.json (in $CLAUDE_CONFIG_DIR, default ~). Claude Code run by root refuses
# bypassPermissions unless told it is inside bubblewrap (CLAUDE_CODE_BUBBLEWRAP), which is true
# of every session the sandbox confines. Codex reads OPENAI_API_KEY, OPENAI_BASE_URL, CODEX_API_KEY,
# CODEX_ACCESS_TOKEN, CODEX_HOME, CODEX_SQLITE_HOME and OPENAI_* workload-identity variables
# (developers.openai.com/codex, "Environment variables"; a provider's own `env_key` is named in
# `[sandbox] env`); Claude Code ANTHROPIC_* (API_KEY, AUTH_TOKEN, BASE_URL, MODEL, CUSTOM_HEADERS,
# ...) and CLAUDE_CODE_* (USE_BEDROCK, ...; code.claude.com/docs/en/env-vars).
# Hosts: codex calls the OpenAI API with an API key, the ChatGPT backend
# (chatgpt.com/backend-api/codex) with a ChatGPT login, and refreshes that login at
# auth.openai.com/oauth/token; Claude Code calls api.anthropic.com and refreshes a Claude login
# at platform.claude.com/v1/oauth/token. Their telemetry (ab.chatgpt.com, statsig, sentry) is
# not needed to work and stays out.
CODEX_HOSTS = ("api.openai.com:443", "auth.openai.com:443", "chatgpt.com:443")
CLAUDE_HOSTS = ("api.anthropic.com:443", "platform.claude.com:443")
# Gemini CLI reads ~/.gemini ($GEMINI_CLI_HOME replaces
# HOME itself, so it is not listed: the sandbox's HOME is the one it must read), Qwen Code
# $QWEN_HOME (default ~/.qwen), OpenCode XDG's ~/.config/opencode and ~/.local/share/opencode,
# Copilot CLI $COPILOT_HOME (default ~/.copilot; a GitHub sign-in's token is in the OS keychain
# or COPILOT_GITHUB_TOKEN / GH_TOKEN / GITHUB_TOKEN, and a BYOK provider is COPILOT_PROVIDER_*).
# The variables and hosts come from each CLI's own source (docs/agent-cli-limits.md).
BACKENDS: Mapping[str, BackendInfo] = MappingProxyType(
    {
        info.name: info
        for info in (
            BackendInfo(
                "codex",
                "codex",
                (HomeFiles("CODEX_HOME", ".codex", ("config.toml", "auth.json", "AGENTS.md")),),
                env=("CODEX_*", "OPENAI_*"),
                hosts=CODEX_HOSTS,
                install=f"npm install -g @openai/codex@{PINNED['codex']}",
            ),
            BackendInfo(
                "claude",
                "claude",
                (
                    HomeFiles(
                        "CLAUDE_CONFIG_DIR",
                        ".claude",
                        (".credentials.json", "settings.json", "CLAUDE.md"),
                    ),
                    HomeFiles("CLAUDE_CONFIG_DIR", "", (".claude.json",)),
                ),
                (("CLAUDE_CODE_BUBBLEWRAP", "1"),),
                env=("ANTHROPIC_*", "CLAUDE_CODE_*", "CLAUDE_CONFIG_DIR"),
                hosts=CLAUDE_HOSTS,
                install=f"npm install -g @anthropic-ai/claude-code@{PINNED['claude']}",
            ),
            BackendInfo(
                "gemini",
                "gemini",
                (
                    HomeFiles(
                        "",
                        ".gemini",
                        ("settings.json", "oauth_creds.json", "google_accounts.json", "GEMINI.md"),
                    ),
                ),
                env=(
                    "GEMINI_API_KEY",
                    "GOOGLE_API_KEY",
                    "GOOGLE_GEMINI_BASE_URL",
                    "GOOGLE_VERTEX_BASE_URL",
                    "GOOGLE_CLOUD_PROJECT",
                    "GOOGLE_CLOUD_LOCATION",
                    "GOOGLE_GENAI_USE_VERTEXAI",
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    "GEMINI_MODEL",
                ),
                hosts=(
                    "generativelanguage.googleapis.com:443",
                    "cloudcode-pa.googleapis.com:443",
                    "oauth2.googleapis.com:443",
                    "*.aiplatform.googleapis.com:443",
                ),
                install=f"npm install -g @google/gemini-cli@{PINNED['gemini']}",
            ),
            BackendInfo(
                "qwen",
                "qwen",
                (
                    HomeFiles(
                        "QWEN_HOME", ".qwen", ("settings.json", "oauth_creds.json", "QWEN.md")
                    ),
                ),
                env=(
                    "OPENAI_API_KEY",
                    "OPENAI_BASE_URL",
                    "OPENAI_MODEL",
                    "DASHSCOPE_API_KEY",
                    "QWEN_CODE_*",
                ),
                hosts=(
                    "dashscope.aliyuncs.com:443",
                    "dashscope-intl.aliyuncs.com:443",
                    "coding.dashscope.aliyuncs.com:443",
                    "chat.qwen.ai:443",
                ),
                install=f"npm install -g @qwen-code/qwen-code@{PINNED['qwen']}",
            ),
            BackendInfo(
                "opencode",
                "opencode",
                (
                    HomeFiles(
                        "", ".config/opencode", ("opencode.json", "opencode.jsonc", "AGENTS.md")
                    ),
                    HomeFiles("", ".local/share/opencode", ("auth.json",)),
                ),
                env=(
                    "OPENCODE_*",
                    "OPENAI_API_KEY",
                    "ANTHROPIC_API_KEY",
                    "GEMINI_API_KEY",
                    "OPENROUTER_API_KEY",
                ),
                hosts=(
                    "opencode.ai:443",
                    "models.dev:443",
                    "api.openai.com:443",
                    "api.anthropic.com:443",
                    "openrouter.ai:443",
                ),
                install=f"npm install -g opencode-ai@{PINNED['opencode']}",
            ),
            BackendInfo(
                "copilot",
                "copilot",
                (
                    HomeFiles(
                        "COPILOT_HOME",
                        ".copilot",
                        ("config.json", "settings.json", "mcp-config.json"),
                    ),
                ),
                env=("COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST"),
                hosts=(
                    "api.githubcopilot.com:443",
                    "*.githubcopilot.com:443",
                    "api.github.com:443",
                    "github.com:443",
                ),
                install=f"npm install -g @github/copilot@{PINNED['copilot']}",
            ),
            BackendInfo("command", None),
        )
    }
)
# What config.toml and `runner init` use when no backend is named.
DEFAULT_BACKEND: BackendName = "codex"


def backend_names() -> str:
    """The names, sorted and comma-separated, as error messages and help list them."""
    return ", ".join(sorted(BACKENDS))


def agent_argv(backend: str, command: tuple[str, ...]) -> tuple[str, ...]:
    """What `[agent] command` runs for `backend`: the command, else the backend's program."""
    program = BACKENDS[backend].program
    return command or (() if program is None else (program,))
