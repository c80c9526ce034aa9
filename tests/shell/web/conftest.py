"""The headless Chromium the browser tests of `runner serve` drive (Debian's chromium and
chromium-driver; each test module skips without them, or fails under CI=true)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def headless_chrome(*arguments: str) -> Iterator[object]:
    """A headless Chromium driven by chromedriver, `arguments` added, quit on leaving."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", *arguments):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(str(shutil.which("chromedriver"))))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser() -> Iterator[object]:
    with headless_chrome() as driver:
        yield driver
