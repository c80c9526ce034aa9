"""A run's execution history: the iteration records and what they amount to (the audit that
checks every pass a run's commits claim is `runner_core.audit`).

Reads records as values; never reads them from disk or git.
"""
