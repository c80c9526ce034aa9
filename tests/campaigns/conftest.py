"""Campaigns (chaos, hostile agents, load, fuzz) carry the `campaign` marker: `-m 'not campaign'`
leaves them out, and each sizes itself from its environment variable so that CI runs it bounded."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "campaigns" in item.path.parts:
            item.add_marker(pytest.mark.campaign)
