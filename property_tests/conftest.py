"""Hypothesis profiles for the property suite, chosen by the HYPOTHESIS_PROFILE variable.

`dev` (the default) is quick enough to run on every save; `ci` runs six times as many
examples. Neither profile has a deadline or the too-slow health check: an outcome must never
depend on how busy the machine is.
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
    max_examples=300,
    deadline=None,
    print_blob=True,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
