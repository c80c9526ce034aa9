"""The files of `.runner/`: where they live, atomic writes and capped reads, the state files,
the iteration log and the event log (where a run's history is read from, git included, is
`runner_shell.git.history_sources`).

Reads and writes files with one-line errors; never decides what they should say.
"""
