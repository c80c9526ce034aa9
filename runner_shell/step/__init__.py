"""One `runner step`: preflight checks, the interpreter of the core's iteration machine, the
lock and journal, the iteration's commit, the protected runner files, `runner recover`, the
event sink that appends events and fires their hooks (`event_sink`, `hooks`, `output_events`
streaming a process's output as events), what a run has spent (`budgets`), and the runs of a
repository as the lock, the journal and git show them (`run_branches`).

Carries out the effects the core answers, in its order; never chooses one.
"""
