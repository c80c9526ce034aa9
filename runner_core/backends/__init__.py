"""What each agent CLI's own output means (Codex's JSONL events, Claude Code's result object):
its usage, its end and its limits.

One module per backend's output; never starts the CLI (that is `runner_shell.agents`).
"""
