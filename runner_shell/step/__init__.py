"""One `runner step`: preflight checks, the interpreter of the core's iteration machine, the
lock and journal, the processes it starts, the protected runner files and `runner recover`.

Carries out the effects the core answers, in its order; never chooses one.
"""
