"""`runner loop` over a night: `night_loop` carries out the core's loop decisions; `event_sink`
appends events and fires their hooks (`hooks`), `output_events` streams a process's output as
events, `budgets` reads what a run has spent (`runner_shell.signals` turns signals into
`Interrupted`).

Sleeps, waits for signals and calls hooks as the core decided; never decides whether to go on.
"""
