"""Hypothesis properties of runner_core: each test's docstring states the invariant it checks."""
