"""git through its CLI, hardened against a rigged repository: the run branch, commits, history,
the log archive under `refs/runner/logs/` and where a run's history is read from (its iteration
directories, the archive, the branch's trailers: `history_sources`).

Every git process has a deadline; nothing here decides what to commit.
"""
