"""Hypothesis profiles for the property suite, chosen by the HYPOTHESIS_PROFILE variable.

`dev` (the default) is quick enough to run on every save. `ci` is what `.ci/run` runs: as many
examples as `dev`, sized for CI's budget (about 4 minutes of the property suite on two cores),
printing the blob of any failure so that it can be replayed. `nightly` is the long campaign,
six times as many examples (about 7x the time of `ci`), run apart from CI:

    HYPOTHESIS_PROFILE=nightly python -m pytest -q property_tests

No profile has a deadline or the too-slow health check: an outcome must never depend on how
busy the machine is. Tests that fix their own `max_examples` keep it under every profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    print_blob=True,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "nightly",
    max_examples=300,
    deadline=None,
    print_blob=True,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
