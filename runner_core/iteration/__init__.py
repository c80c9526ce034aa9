"""One iteration: its plan, the machine that turns gathered facts (`facts`) and results
(`results`) into effects (`effects`) along its stage table (`stages`), one step module per
part of it (`agent_steps`, `guard_steps`, `end_steps`), what the shell provides
(`ports`), whose error a failure is (`failures`), the record and write-set it ends with (the
state updates it applies are the tree's: `runner_core.tree.state_update`), the prompt pack,
the preconditions of a step, the events it emits and how a killed iteration ends (`recovery`,
`interrupted`).

Decides everything about one step; never runs a process, reads the clock or touches git (the
shell carries out the effects it answers).
"""
