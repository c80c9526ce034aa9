"""`runner serve` in headless Chromium while a real two-slot `runner loop` runs two jobs: the
page lists both jobs, each with its own agent's live output, and both nodes run in the tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.e2e.test_parallel_views import printing_agents
from tests.helpers.e2e import PYTHON, Project
from tests.helpers.serve import free_port, serving
from tests.shell.web.test_serve_browser import WAIT_SECS, badge, browser, text, wait

__all__ = ["browser"]  # the fixture, shared with the other browser tests


def job_texts(driver: webdriver.Chrome) -> dict[str, str]:
    """Each listed job's heading, by its iteration."""
    jobs = driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
    return {
        str(job.get_attribute("data-iter")): str(job.find_element(By.TAG_NAME, "h3").text)
        for job in jobs
    }


def job_output(driver: webdriver.Chrome, iteration: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f'#jobs .job[data-iter="{iteration}"] pre')
    return str(found[0].text) if found else ""


def test_the_page_shows_both_jobs_of_a_parallel_loop_with_their_output(
    tmp_path: Path, project: Project, browser: webdriver.Chrome
) -> None:
    printing_agents(project, 8, ("a", "b"))
    with serving(project, free_port()) as base:
        browser.get(base)
        wait(browser, lambda: browser.execute_script("return view.refreshes;") == 2, "read")
        loop = subprocess.Popen(
            [PYTHON, "-m", "runner_shell", "loop"],
            cwd=project.root,
            env=project.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait(browser, lambda: len(job_texts(browser)) == 2, "both jobs listed")
            jobs = job_texts(browser)
            first, second = sorted(jobs, key=int)
            assert " a " in jobs[first] and " b " in jobs[second], jobs
            assert all("running" in heading for heading in jobs.values()), jobs
            assert badge(browser, "a") == badge(browser, "b") == "running"
            assert text(browser, "run-state") == "running"
            wait(browser, lambda: "a tick" in job_output(browser, first), "a's live output")
            wait(browser, lambda: "b tick" in job_output(browser, second), "b's live output")
            assert "b tick" not in job_output(browser, first)
            assert "a tick" not in job_output(browser, second)
            assert browser.save_screenshot(str(tmp_path / "jobs.png"))
            assert loop.wait(timeout=WAIT_SECS * 2) == 0
        finally:
            if loop.poll() is None:
                loop.kill()
                loop.wait(timeout=10)
        wait(browser, lambda: text(browser, "run-state") == "complete", "the run complete")
        wait(browser, lambda: not job_texts(browser), "no job listed once they merged")
