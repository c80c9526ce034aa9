"""`runner serve`'s page in a real headless Chromium shows, visibly, that the server stopped
following the run's events, with the reason its stderr gives. In CI a missing browser fails."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.e2e import ProjectFactory
from tests.helpers.serve import capped_server, completed_one_leaf, events_log

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

if CHROMIUM is None or CHROMEDRIVER is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs chromium and chromium-driver: .ci/run installs them")
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def test_the_page_shows_that_live_events_stopped_and_why(
    tmp_path: Path, make_project: ProjectFactory, browser: webdriver.Chrome
) -> None:
    project = completed_one_leaf(tmp_path, make_project)
    log = events_log(project)
    log.unlink()
    os.mkfifo(log)

    with capped_server(project) as (_, base):
        browser.get(base)
        notice = browser.find_element(By.ID, "events-failure")
        WebDriverWait(browser, 30, poll_frequency=0.1).until(
            lambda _: notice.is_displayed(), message="the failure was never shown"
        )
        text = str(notice.text)

    assert text.startswith("live events stopped: ")
    assert text.endswith("is a FIFO, not a regular file; the runner does not read it (remove it)")
