"""`runner serve`'s page laid out in a real headless Chromium under its own CSP: nested nodes
are indented (by a CSS property the CSP allows, never an inline style attribute), a long
title keeps its full text in a tooltip, and the console shows no CSP violation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.helpers.e2e import ProjectFactory, node
from tests.helpers.serve import free_port, serving
from tests.shell.web.test_serve_browser import CHROMEDRIVER, CHROMIUM, wait

LONG_TITLE = "A title long enough to be cut at 1400 px " * 8
DEEP = node(
    "root",
    title="Project goal",
    children=[
        node(
            "root.1",
            title="One",
            children=[
                node(
                    "root.1.1", title="Two", children=[node("root.1.1.1", title=LONG_TITLE.strip())]
                )
            ],
        )
    ],
)


@pytest.fixture
def logged_browser() -> Iterator[webdriver.Chrome]:
    """Chromium whose console messages (CSP violations among them) the test can read."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1400,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def _indent(driver: webdriver.Chrome, node_id: str) -> float:
    script = (
        'const row = document.querySelector(`.node[data-id="${arguments[0]}"]`);'
        "return parseFloat(getComputedStyle(row).paddingLeft);"
    )
    return float(driver.execute_script(script, node_id))


def _open_all(driver: webdriver.Chrome) -> bool:
    driver.execute_script("for (const row of view.rows) view.open.add(row.id); renderTree();")
    return len(driver.find_elements(By.CSS_SELECTOR, ".node")) == 4


def test_a_nested_node_is_indented_deeper_than_its_parent_with_no_csp_violation(
    tmp_path: Path, make_project: ProjectFactory, logged_browser: webdriver.Chrome
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(DEEP)
    with serving(project, free_port()) as base:
        logged_browser.get(base)
        wait(logged_browser, lambda: _open_all(logged_browser), "every node shown")

        depths = [_indent(logged_browser, n) for n in ("root", "root.1", "root.1.1", "root.1.1.1")]
        assert depths == sorted(depths) and len(set(depths)) == 4, depths
        deepest = logged_browser.find_element(By.CSS_SELECTOR, '[data-id="root.1.1.1"] .title')
        assert deepest.get_attribute("title") == LONG_TITLE.strip()
        figures = logged_browser.find_element(By.CSS_SELECTOR, '[data-id="root.1.1.1"] .figures')
        tree = logged_browser.find_element(By.ID, "tree")
        assert figures.rect["x"] + figures.rect["width"] <= tree.rect["x"] + tree.rect["width"] + 1
        # selenium leaves `get_log` unannotated.
        log = logged_browser.get_log("browser")  # type: ignore[no-untyped-call]
        messages = [entry["message"] for entry in log]
    assert not [m for m in messages if "Content Security Policy" in m], messages
