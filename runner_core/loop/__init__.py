"""The loop between iterations: what `runner loop` does after each step, budgets, usage-limit
waits and the run's event stream.

Decides whether to go on, wait, decompose or stop; never sleeps, spawns or prints.
"""
