"""What a guard's run says about a node: per-test outcomes read from its report, the figures
they add up to, and the ratchet's verdict (no regression, the node's own tests pass, protected
test files untouched).

Decides whether a `done` passes in ratchet mode and why not; never runs a guard, never reads a
report file (the shell parses the JUnit XML into `TestReport`s) and never touches git.
"""
