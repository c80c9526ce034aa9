"""The imperative shell of runner: CLI, files, git, subprocesses, time."""
