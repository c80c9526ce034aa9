"""Agent sessions: starting Codex CLI, Claude Code, a plain command or the built-in demo agent
and reporting what they left.

One module per backend (`command`, `codex`, `claude`) over `_common` (the request, the run,
starting the process, reading what it wrote); `session` maps each name of
runner_core.backends.registry to its class. Runs an agent; never judges its result (the core
does).
"""
