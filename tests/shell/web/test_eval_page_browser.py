"""`runner eval`'s summary page in a real headless Chromium: the table and the plot are in the
DOM, one row and one point per variant, with no script and nothing fetched (CI=true: a missing
browser fails, as in test_serve_browser.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from runner_core.eval.html import summary_html
from runner_core.eval.summary import RunFigures, summary_document

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

if CHROMIUM is None or CHROMEDRIVER is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs chromium and chromium-driver: .ci/run installs them")
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def test_the_summary_page_shows_its_table_and_plot(
    tmp_path: Path, browser: webdriver.Chrome
) -> None:
    runs = [
        RunFigures("calc", "command", "builtin", 1, "success", 3, 1, 900, 0.0, 7.0),
        RunFigures("calc", "command", "builtin", 2, "fail", 4, 2, 1000, 0.0, 8.0),
        RunFigures("calc", "codex", "<terse>", 1, "success", 2, 0, 5000, 0.12, 30.0),
    ]
    page = tmp_path / "summary.html"
    page.write_text(summary_html(summary_document("e<1>", runs)), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.title == "runner eval e<1>"
    rows = browser.find_elements(By.CSS_SELECTOR, "table#summary tbody tr")
    cells = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert [row[:5] for row in cells] == [
        ["calc", "codex", "<terse>", "1", "1/1 (100%)"],
        ["calc", "command", "builtin", "2", "1/2 (50%)"],
    ]
    points = browser.find_elements(By.CSS_SELECTOR, "svg#plot g.variant circle")
    assert len(points) == 2
    box = browser.find_element(By.ID, "plot").rect
    assert box["width"] > 300 and box["height"] > 200
    # The cheaper variant is left of the dearer one; the 100 % one is higher (smaller y).
    codex, command = (float(point.get_attribute("cx") or 0) for point in points)
    assert command < codex
    labels = [
        label.text for label in browser.find_elements(By.CSS_SELECTOR, "svg#plot g.variant text")
    ]
    assert "calc / codex / <terse>" in labels
    assert browser.execute_script("return document.scripts.length") == 0
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert fetched == []
