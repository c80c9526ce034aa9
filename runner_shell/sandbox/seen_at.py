"""Where a sandboxed process sees the checkout, the directory it writes its output to and its
private HOME: fixed paths of their own, never their host paths (which lie under the run's
`.git/runner/`, a path Jest and other tools skip, and differ from slot to slot).

The one home of these paths: the sandbox binds them (runner_shell.sandbox.bwrap), the prompt
names them and a report read back maps them (docs/sandbox.md). Imports nothing, so a prompt or
a report reader does not load the sandbox to know them.
"""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path("/checkout")
ITERATION = Path("/iteration")
SANDBOX_HOME = Path("/sandbox-home")
