"""Agent sessions: starting Codex CLI, Claude Code, a plain command or the built-in demo agent
and reporting what they left.

Runs an agent; never judges its result (the core does).
"""
