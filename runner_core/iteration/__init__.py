"""One iteration: its plan (`plan`), the machine (`machine`) that turns the facts it starts
from (`facts`) and the results of its effects (`effects`) into the next effect along its stage
table (`stages`), the steps after the agent (`steps`), the guard's part (`guard_stage`), the
record and write-set it ends with (`record`), the events and exit code the loop sees (`events`),
whether a step may run (`preconditions`) and what a killed iteration's journal means (`recovery`).

Decides everything about one step; never runs a process, reads the clock or touches git (the
shell carries out the effects it answers).
"""
