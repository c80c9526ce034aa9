"""The agent's scratch checkout: slots reset to the iteration's base, the sandbox's argv, and
the listing the core's import rules decide over.

The agent and the guard work in a slot with its own `.git`; the runner alone writes the run's
repository, importing the slot's work tree as files (runner_core.changes.import_rules).
"""
