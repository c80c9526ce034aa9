"""A run's execution history: the iteration records, what they amount to, and the audit that
checks every pass a run's commits claim.

Reads records as values; never reads them from disk or git.
"""
