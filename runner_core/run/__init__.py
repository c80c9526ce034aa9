"""A run's identity and standing: configuration, `run_state.json`, run ids and their branch,
the hash chain and trailers of its commits, operator commands on nodes, guidance, the runs of
a repository and the exit codes.

Decides what a run's files and commits may say; never reads or writes them.
"""
