"""`python -m runner_shell`: the `runner` command."""

from runner_shell.cli.entry import main

main()
