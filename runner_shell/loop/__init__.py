"""`runner loop` over a night: carrying out the core's loop decisions, the event sink with its
hooks, budgets and signals.

Sleeps, signals and calls hooks as the core decided; never decides whether to go on.
"""
