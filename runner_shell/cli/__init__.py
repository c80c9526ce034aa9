"""The `runner` command: typer's app, the fast entry point and the bodies of the commands.

Parses arguments, calls the rooms below and prints what the core rendered; decides nothing.
"""
