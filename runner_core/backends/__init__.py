"""What each agent CLI's own output means (Codex's JSONL events, Claude Code's result object, a
`command` agent's usage and wait files): its usage, its end and its limits.

One module per backend's output (`codex`, `claude`, `command`), `usage` for what any of them
spent, `limits` for a limit any of them hit, and `registry`, the one table of backend names
that config validation, `runner init` and the sandbox read. Never starts the CLI (that is
`runner_shell.agents`).
"""
