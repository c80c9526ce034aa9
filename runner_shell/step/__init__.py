"""One `runner step`: preflight checks, the interpreter of the core's iteration machine, the
lock and journal, the iteration's commit, the protected runner files, `runner recover`, and
the runs of a repository as the lock, the journal and git show them (`run_branches`).

Carries out the effects the core answers, in its order; never chooses one.
"""
