"""`python -m runner_shell`: the `runner` command."""

from runner_shell.entry import main

main()
