"""`runner serve`: a read-only web view of a run, live by server-sent events.

Serves the core's documents; never writes to the repository.
"""
