"""The chat page at `/` in a real browser: Debian's Chromium driven by Playwright (never a
downloaded browser). Skipped, with the reason, where /usr/bin/chromium is missing; CI installs it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.conftest import Served, start
from tests.serve.skills import CHATTY, GREET, RISKY_TURNS, agent_skill

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "serve.png"

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (apt-get install chromium)")]


@pytest.fixture
def page_server(project: Any) -> Iterator[Served]:
    project.write("greet.skill.py", GREET)
    project.write("chatty.skill.py", CHATTY)
    agent_skill(project, "risky", RISKY_TURNS, {"trust": "greet"}, allowed="greet")
    server = start(project, env={"AGENTAPPS_TRUST_TIMEOUT": "20"})
    yield server
    server.stop()


@pytest.fixture
def page(page_server: Served, tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            tab = browser.new_page(viewport={"width": 1100, "height": 560})
            tab.set_default_timeout(15_000)
            tab.goto(page_server.url + "/")
            tab.wait_for_selector("#skill option[value=risky]", state="attached")
            yield tab
        finally:
            browser.close()


def test_run_a_skill_and_approve_its_call_in_place(page, tmp_path):
    page.select_option("#skill", "risky")
    page.click("#run")
    page.wait_for_selector(".approval [data-decision=approve]")
    assert "risky wants to call greet" in page.inner_text(".approval")
    shot = tmp_path / "serve.png"
    page.screenshot(path=str(shot))
    if os.environ.get("UPDATE_DOCS_SCREENSHOT"):
        shutil.copy(shot, SCREENSHOT)
    page.click(".approval [data-decision=approve]")
    page.wait_for_selector("[data-event=result]")
    assert page.inner_text("[data-event=result]").endswith("Done.")
    assert page.locator("[data-event=approval-decided]").inner_text().endswith("approve")
    assert page.locator("[data-event=tool-result]").count() == 1


def test_the_form_follows_the_params_and_threads_can_be_browsed(page):
    page.select_option("#skill", "greet")
    page.fill("#p-name", "Ada")
    page.click("#run")
    page.wait_for_selector("[data-event=result]")
    assert "Hello, Ada!" in page.inner_text("[data-event=result]")
    page.select_option("#skill", "chatty")
    for text in ("one", "two"):
        page.fill("#p-text", text)
        page.click("#run")
        page.wait_for_selector(f"[data-event=result]:has-text('\"heard\": \"{text}\"')")
        page.wait_for_selector("#run:not([disabled])")
    page.wait_for_selector(".thread:has-text('2 runs')")
    page.click("#new-thread")
    page.click(".thread")
    page.wait_for_selector("[data-event=result] >> nth=1")
    shown = page.locator("[data-event=result]").all_inner_texts()
    assert len(shown) == 2 and '"text":"one"' in shown[0] and '"text":"two"' in shown[1]


def test_deny_a_call_in_place_then_cancel_a_run(page):
    page.select_option("#skill", "risky")
    page.click("#run")
    page.click(".approval [data-decision=deny]")
    page.wait_for_selector("[data-event=result]")  # the denial reached the model as the tool's error; it went on
    assert page.locator("[data-event=approval-decided]").inner_text().endswith("deny")
    assert "was not approved" in page.inner_text("[data-event=tool-error]")
    assert page.locator("[data-event=tool-result]").count() == 0
    page.click("#run")
    page.wait_for_selector(".approval [data-decision=approve]")
    page.click("#cancel")
    page.wait_for_selector("[data-event=error]")
    assert page.locator("[data-event=approval-decided]").inner_text().endswith("cancelled")
    assert page.locator("[data-event=result]").count() == 0
    page.wait_for_selector("#run:not([disabled])")
    assert page.is_disabled("#cancel")
