"""`runner loop` over a night: `night_loop` carries out the core's loop decisions, the
`parallel_*` modules run jobs in threads and slots and merge them, `remote_loop` hands jobs to
workers. The event sink, its hooks and the budgets read from disk are the step's
(`runner_shell.step`); `runner_shell.signals` turns signals into `Interrupted`.

Sleeps, waits for signals and calls hooks as the core decided; never decides whether to go on.
"""
