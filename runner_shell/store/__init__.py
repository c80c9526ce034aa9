"""The files of `.runner/`: where they live, atomic writes and capped reads, the state files,
the iteration log, the event log and where a run's history is read from.

Reads and writes files with one-line errors; never decides what they should say.
"""
