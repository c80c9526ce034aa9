"""Campaigns (chaos, hostile agents, load, fuzz) carry the `campaign` marker: `-m 'not campaign'`
leaves them out, and each sizes itself from its environment variable so that CI runs it bounded.

The hostile and load campaigns are also `serial`: they hold agents to their deadlines and keep
20 clients beside a loop that must not slow down, so `.ci/run` runs them on an otherwise idle
machine, apart from the xdist pass. The chaos campaign shares the machine (where its kills land
depends on the machine's speed, which is its point; what it checks does not), as fuzz does.
"""

from __future__ import annotations

import pytest

SERIAL_CAMPAIGNS = ("test_hostile_campaign.py", "test_serve_load.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "campaigns" in item.path.parts:
            item.add_marker(pytest.mark.campaign)
            if item.path.name in SERIAL_CAMPAIGNS:
                item.add_marker(pytest.mark.serial)
