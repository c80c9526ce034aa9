"""One iteration: its plan, the machine that turns gathered facts and results into effects, the
runner-owned state updates, the prompt pack, the preconditions of a step, the events it emits and
how a killed iteration ends.

Decides everything about one step; never runs a process, reads the clock or touches git (the
shell carries out the effects it answers).
"""
