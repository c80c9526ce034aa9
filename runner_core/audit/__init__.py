"""The audit of a run: whether every pass its commits claim holds, read from the commits
themselves (`commit_facts`), replaying each iteration (`iteration_checks`), operator command
(`operator_checks`) and hand edit (`hand_edits`), with what it found (`findings`) and the whole
run's report (`audit.audit_run`).

Stands above the run, the history and the merge it replays; reads commits as values, never
from git.
"""
