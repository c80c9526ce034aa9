"""The guard's side of the shell: reading the JUnit XML report a guard wrote, untrusted.

Turns the report's bytes into the core's `TestReport`; never judges it (runner_core.guard does).
"""
