"""`runner serve` in a real headless Chromium (Debian's `chromium` and `chromium-driver`).

While a real `runner loop` with a fake agent runs: the tree shows the nodes, a node turns
`completed` without a reload, clicking it shows its executions, and a screenshot is saved.
A 10,000-node tree renders lazily within a bound. In CI (CI=true) a missing browser fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.e2e import PYTHON, ProjectFactory, node
from tests.helpers.serve import free_port, leaves_tree, script_leaves, serving

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
WAIT_SECS = 60
# A fresh render of a 10,000-node tree, fetch included, must take less than this.
BIG_TREE_RENDER_MS = 3000
# Records every URL the page fetches from now on, in window.fetched.
COUNT_FETCHES = (
    "window.fetched = []; const fetchFirst = window.fetch;"
    "window.fetch = (url, ...rest) => { window.fetched.push(String(url));"
    " return fetchFirst(url, ...rest); };"
)
USAGE = {"cost_usd": 0.25, "input_tokens": 100, "output_tokens": 20}

if CHROMIUM is None or CHROMEDRIVER is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs chromium and chromium-driver: .ci/run installs them")
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.shell.web.conftest import headless_chrome  # noqa: E402


@pytest.fixture
def browser() -> Iterator[object]:
    with headless_chrome("--window-size=1400,900") as driver:
        yield driver


def badge(driver: webdriver.Chrome, node_id: str) -> str:
    rows = driver.find_elements(By.CSS_SELECTOR, f'.node[data-id="{node_id}"] .badge')
    return str(rows[0].text) if rows else ""


def wait(driver: webdriver.Chrome, condition: Any, what: str) -> None:
    # The page re-renders panels as events arrive: an element read mid-render is asked again.
    WebDriverWait(
        driver,
        WAIT_SECS,
        poll_frequency=0.1,
        ignored_exceptions=(StaleElementReferenceException,),
    ).until(lambda _: condition(), message=what)


def cell_texts(driver: webdriver.Chrome) -> list[str]:
    return [str(cell.text) for cell in driver.find_elements(By.CSS_SELECTOR, "#detail tbody tr td")]


def open_first_iteration_link(driver: webdriver.Chrome) -> bool:
    driver.find_element(By.CSS_SELECTOR, "#detail tbody tr td a").click()
    return True


def test_the_page_follows_a_running_loop_without_a_reload(
    tmp_path: Path, make_project: ProjectFactory, browser: webdriver.Chrome
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree(), budget={"max_cost_usd": 5.0})
    script_leaves(project, 3, sleep=1.0, usage=USAGE)
    with serving(project, free_port()) as base:
        browser.get(base)
        wait(browser, lambda: text(browser, "budget") == "cost_usd 0/5", "the budget, unspent")
        wait(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, ".node")) == 4, "tree")
        assert [badge(browser, f"root.{n}") for n in (1, 2, 3)] == ["pending"] * 3
        # The page reads the documents on opening and once the event stream is open.
        wait(browser, lambda: browser.execute_script("return view.refreshes;") == 2, "read")
        browser.execute_script("window.notReloaded = true;" + COUNT_FETCHES)
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop"], cwd=project.root, env=project.env
        )
        wait(browser, lambda: badge(browser, "root.1") == "completed", "root.1 completed")
        assert browser.execute_script("return window.notReloaded === true;")

        browser.find_element(By.CSS_SELECTOR, '.node[data-id="root.1"] .title').click()
        wait(browser, lambda: "Executions (1)" in detail_text(browser), "the node's executions")
        wait(browser, lambda: "Do root.1." in detail_text(browser), "the node's goal")
        wait(browser, lambda: "root.1 is done" in detail_text(browser), "its acceptance")
        wait(browser, lambda: cell_texts(browser)[:3] == ["1", "done", "pass"], "its execution")

        assert loop.wait(timeout=WAIT_SECS) == 0
        wait(browser, lambda: text(browser, "run-state") == "complete", "the run complete")
        wait(browser, lambda: text(browser, "budget") == "cost_usd 0.75/5", "spent vs budget")
        wait(browser, lambda: history_iterations(browser) == ["3", "2", "1"], "the iterations")
        assert browser.execute_script("return window.notReloaded === true;")
        # Node states, the overview and new iterations came as events: no whole document was
        # read again while the loop ran (the node panel reads only its node).
        fetched = browser.execute_script("return window.fetched;")
        assert [url for url in fetched if "/api/nodes/" not in url] == []
        shot = tmp_path / "serve.png"
        assert browser.save_screenshot(str(shot))

        # The iteration page shows what the iteration did to the tree.
        wait(browser, lambda: open_first_iteration_link(browser), "the iteration link")
        wait(browser, lambda: "root.1 passes: false -> true" in detail_text(browser), "tree diff")
        # Its prompt opens on demand.
        wait(browser, lambda: open_file(browser, "prompt.md"), "the prompt's summary")
        wait(browser, lambda: "Do root.1." in file_text(browser, "prompt.md"), "the prompt")
    assert shot.stat().st_size > 10_000
    copy_to = os.environ.get("RUNNER_SERVE_SCREENSHOT")
    if copy_to:
        shutil.copyfile(shot, copy_to)


def test_a_wait_and_a_reached_budget_show_as_they_happen(
    tmp_path: Path, make_project: ProjectFactory, browser: webdriver.Chrome
) -> None:
    project = make_project(tmp_path, "started")
    loop_config = {"runner_error_backoff_secs": [0], "max_wait_secs": 30}
    project.prepare(leaves_tree(), loop=loop_config, budget={"max_cost_usd": 0.4})
    done = {"status": "done", "summary": "Leaf done."}
    project.agent_script(
        {
            1: {"wait": {"retry_after_secs": 8}, "exit": 1},
            2: {"usage": USAGE, "output": done},
            3: {"usage": USAGE, "output": done},
        }
    )
    project.guard_script([{"stdout": "ok\n"}])
    with serving(project, free_port()) as base:
        browser.get(base)
        wait(browser, lambda: text(browser, "run-state") == "idle", "the run idle")
        browser.execute_script("window.notReloaded = true;")
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop"], cwd=project.root, env=project.env
        )
        wait(browser, lambda: text(browser, "run-state") == "waiting", "the loop waiting")
        wait(browser, lambda: text(browser, "wait").startswith("rate_limited until "), "its end")
        assert "left" in text(browser, "wait")

        assert loop.wait(timeout=WAIT_SECS) == 1
        wait(browser, lambda: text(browser, "run-state") == "budget", "the budget reached")
        wait(browser, lambda: text(browser, "budget") == "cost_usd 0.5/0.4 (reached)", "spent")
        assert not browser.find_element(By.ID, "wait").is_displayed()
        assert browser.execute_script("return window.notReloaded === true;")


def open_file(browser: webdriver.Chrome, name: str) -> bool:
    shown = browser.find_element(By.CSS_SELECTOR, f'pre[data-file="{name}"]')
    browser.execute_script("arguments[0].parentElement.open = true;", shown)
    return True


def file_text(browser: webdriver.Chrome, name: str) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, f'pre[data-file="{name}"]').text)


def history_iterations(browser: webdriver.Chrome) -> list[str]:
    rows = browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    return [str(row.get_attribute("data-iter")) for row in rows]


def text(browser: webdriver.Chrome, element_id: str) -> str:
    return str(browser.find_element(By.ID, element_id).text)


def detail_text(browser: webdriver.Chrome) -> str:
    return str(browser.find_element(By.ID, "detail").text)


def big_tree(fanout: int) -> dict[str, Any]:
    """root -> fanout children -> fanout grandchildren each: 1 + fanout + fanout² nodes."""
    children = [
        node(
            f"root.{a}",
            order=a,
            children=[node(f"root.{a}.{b}", order=b) for b in range(1, fanout + 1)],
        )
        for a in range(1, fanout + 1)
    ]
    return node("root", children=children)


@pytest.mark.serial  # a render time bound (BIG_TREE_RENDER_MS)
def test_a_ten_thousand_node_tree_renders_lazily_and_fast(
    tmp_path: Path, make_project: ProjectFactory, browser: webdriver.Chrome
) -> None:
    project = make_project(tmp_path, "started")
    project.write_tree(big_tree(100))  # 10,101 nodes
    with serving(project, free_port()) as base:
        browser.get(base)
        wait(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, ".node")) > 1, "tree")
        elapsed = browser.execute_async_script(
            "const done = arguments[0]; const t0 = performance.now(); view.shape = '';"
            "refresh().then(() => done(performance.now() - t0));"
        )
        rendered = len(browser.find_elements(By.CSS_SELECTOR, ".node"))
        browser.find_element(By.CSS_SELECTOR, '.node[data-id="root.7"] .toggle').click()
        expanded = len(browser.find_elements(By.CSS_SELECTOR, ".node"))

    print(f"10,101-node tree: full refresh and render in {elapsed:.0f} ms, {rendered} rows")
    assert rendered == 101
    assert expanded == 201
    assert elapsed < BIG_TREE_RENDER_MS
