"""`runner serve`'s first state and pictures in a real headless Chromium, on a finished
four-slot run: the page as served (before and without its script) and the `--snapshot` page
show the tree progress, the tests and spend charts and the slots' timeline, checked in the
DOM/SVG; `chromium --headless --screenshot` of each is saved (under RUNNER_SHOTS_DIR if set)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx2 as httpx
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.helpers.e2e import Project
from tests.helpers.serve import free_port, serving
from tests.helpers.watched_run import LEAVES, SLOTS, four_slot_run
from tests.shell.web.test_serve_browser import CHROMIUM, browser, text, wait

__all__ = ["browser"]  # the fixture, shared with the other browser tests


def finished_run(project: Project) -> None:
    four_slot_run(project, 0.6)
    loop = project.runner("loop", timeout=120)
    assert loop.returncode == 0, loop.stderr


def shot(target: str, out: Path) -> None:
    """`chromium --headless --screenshot` as a new user would take it, no driver involved."""
    subprocess.run(
        [
            str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,1100",
            f"--screenshot={out}", target,
        ],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    assert out.stat().st_size > 20_000
    keep = os.environ.get("RUNNER_SHOTS_DIR")
    if keep:
        shutil.copyfile(out, Path(keep) / out.name)


def assert_pictures(driver: webdriver.Chrome) -> None:
    """What the pictures of the finished run hold, read from their SVG."""
    progress = driver.find_element(By.ID, "progress")
    assert "Leaves: 8/8 passed" in str(progress.get_attribute("aria-label"))
    assert driver.find_elements(By.CSS_SELECTOR, "#progress .seg-passed")
    bars = driver.find_elements(By.CSS_SELECTOR, "#chart-tests .bar")
    assert len(bars) == len(LEAVES)  # the retry ran no guard
    assert driver.find_elements(By.CSS_SELECTOR, "#chart-spend path.line-tokens")
    assert driver.find_elements(By.CSS_SELECTOR, "#chart-spend path.line-cost")
    slots = driver.find_elements(By.CSS_SELECTOR, "#timeline .slot-bar")
    assert len(slots) == len(LEAVES) + 1
    lanes = {str(lane.text) for lane in driver.find_elements(By.CSS_SELECTOR, "#timeline .lane")}
    assert lanes == {f"slot {n}" for n in range(1, SLOTS + 1)}, lanes
    outcomes = [str(bar.get_attribute("class")) for bar in slots]
    assert sum("outcome-retry" in kind for kind in outcomes) == 1
    assert sum("outcome-passed" in kind for kind in outcomes) == len(LEAVES)
    # Readable without colour: the retry's fill is a pattern, and the legend names each.
    legend = {str(t.text) for t in driver.find_elements(By.CSS_SELECTOR, "#timeline .legend text")}
    assert {"passed", "retry", "failed", "running"} <= legend


def test_the_served_page_and_its_snapshot_show_the_run_without_script(
    tmp_path: Path, project: Project, browser: webdriver.Chrome
) -> None:
    finished_run(project)
    snapshot = tmp_path / "snapshot.html"
    written = project.runner("serve", "--snapshot", str(snapshot))
    assert written.returncode == 0, written.stderr
    assert "<script" not in snapshot.read_text(encoding="utf-8")

    with serving(project, free_port()) as base:
        page = httpx.get(base, timeout=10).text
        # The first state is in the HTML itself: the run, its tree and its history rows.
        assert 'class="badge s-complete">complete<' in page
        assert all(f'data-id="{leaf}"' in page for leaf in LEAVES)
        assert page.count('<tr data-iter="') == len(LEAVES) + 1
        shot(base, tmp_path / "serve-finished-four-slots.png")

        browser.get(base)
        wait(browser, lambda: browser.execute_script("return view.refreshes;") == 2, "live")
        assert text(browser, "run-state") == "complete"
        assert text(browser, "leaves") == "8/8 passed"
        assert_pictures(browser)

    shot(snapshot.as_uri(), tmp_path / "serve-snapshot.png")
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    browser.get(snapshot.as_uri())
    assert text(browser, "run-state") == "complete"
    assert text(browser, "live") == "snapshot"
    assert_pictures(browser)
