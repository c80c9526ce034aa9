"""`runner serve` shows which backend ran each iteration and the loop's switch to a fallback
backend (`[agent] fallback`), live in a real headless Chromium and in the served page's HTML.

The backends are the fake `codex` and `claude` of tests/helpers/fake_clis: codex hits its usage
limit once, and the loop runs claude instead of waiting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx2 as httpx
import jsonschema
import pytest

from tests.helpers import FAKE_CLIS, SCHEMAS
from tests.helpers.e2e import PYTHON, Project, ProjectFactory, node
from tests.helpers.serve import free_port, serving

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
WAIT_SECS = 60
RESET_SECS = 30  # far beyond the run: every later iteration stays on claude
OVERVIEW = json.loads((SCHEMAS / "views" / "overview.schema.json").read_text(encoding="utf-8"))
pytestmark = pytest.mark.one_slot  # which iteration switches is the one-slot loop's order

if CHROMIUM is None or CHROMEDRIVER is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs chromium and chromium-driver: .ci/run installs them")
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def wait(driver: webdriver.Chrome, condition: Any, what: str) -> None:
    WebDriverWait(
        driver,
        WAIT_SECS,
        poll_frequency=0.1,
        ignored_exceptions=(StaleElementReferenceException,),
    ).until(lambda _: condition(), message=what)


def codex_then_claude(project: Project) -> None:
    leaves = [node(f"root.{n}", order=n) for n in (1, 2, 3)]
    project.prepare(
        node("root", children=leaves),
        loop={"max_wait_secs": RESET_SECS, "runner_error_backoff_secs": [0]},
        sandbox={"env": ["FAKE_CLI_*", "FAKE_CODEX_*", "FAKE_CLAUDE_*"]},
    )
    text = project.config_path.read_text(encoding="utf-8")
    start = text.index("[agent]")
    project.config_path.write_text(
        text[:start] + '[agent]\nbackend = "codex"\nfallback = ["claude"]\n', encoding="utf-8"
    )
    project.commit_setup("codex, then claude")
    project.env["PATH"] = f"{FAKE_CLIS}{os.pathsep}{project.env['PATH']}"
    project.env["FAKE_CODEX_LIMIT_ONCE"] = str(project.root.parent / "codex-limited-once")
    project.env["FAKE_CLI_RESETS_IN"] = str(RESET_SECS)


def backend_cells(driver: webdriver.Chrome) -> dict[str, str]:
    """Each history row's backend cell, by iteration."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    return {
        str(row.get_attribute("data-iter")): str(row.find_elements(By.TAG_NAME, "td")[3].text)
        for row in rows
    }


def test_the_history_shows_each_backend_and_the_switch_live_and_in_the_page(
    tmp_path: Path, make_project: ProjectFactory, browser: webdriver.Chrome
) -> None:
    project = make_project(tmp_path, "started")
    codex_then_claude(project)
    with serving(project, free_port()) as base:
        browser.get(base)
        wait(browser, lambda: browser.execute_script("return view.refreshes;") == 2, "read")
        browser.execute_script("window.notReloaded = true;")
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop"], cwd=project.root, env=project.env
        )
        assert loop.wait(timeout=WAIT_SECS) == 0
        switched = "codex \u2192 claude"
        expected = {"1": switched, "2": "claude", "3": "claude", "4": "claude"}
        wait(browser, lambda: backend_cells(browser) == expected, "the backends and the switch")
        assert browser.execute_script("return window.notReloaded === true;")
        cell = browser.find_element(By.CSS_SELECTOR, '#history tr[data-iter="1"] .fallback')
        title = str(cell.get_attribute("title"))
        assert title.startswith("codex hit its limit until ") and "the loop ran claude" in title

        # The node panel's executions name their backend too.
        browser.find_element(By.CSS_SELECTOR, '.node[data-id="root.1"] .title').click()
        wait(
            browser,
            lambda: (
                [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#detail tbody td")][3:4]
                == [switched]
            ),
            "the node's first execution, on codex, switched",
        )

        overview = httpx.get(f"{base}/api/overview").json()
        jsonschema.validate(overview, OVERVIEW)
        assert [(f["iter"], f["backend"], f["to"]) for f in overview["fallbacks"]] == [
            (1, "codex", "claude")
        ]
        # The first state, before any script runs, shows the same.
        page = httpx.get(base).text
        assert f'title="codex hit its limit until {overview["fallbacks"][0]["until"]}' in page
        assert f"codex {chr(0x2192)} claude</span>" in page
