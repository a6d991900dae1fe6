"""The replay Space in a real browser: Debian's chromium driven by Playwright opens the page with no run given (the
newest run of the local registry shows) and deep links (an episode whole, or at a turn), steps through a replay,
plays it, opens the side-by-side view, and reads the text a person reads. Screenshots (PNG) go to
$SEAL_HUB_SCREENSHOTS (else the test's temporary folder) for review.

Skips, saying why, only when no chromium executable is installed (`apt-get install -y chromium`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.space_app import served_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium executable on PATH: install Debian's with `apt-get install -y chromium`"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory, suite):
    with served_app(tmp_path_factory.mktemp("browser"), suite, "seal_replay_app_in_browser", styled=True) as served:
        _, url, world = served
        yield {"url": url, **world}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("SEAL_HUB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(url, wait_until="load")
    return page


# the chat's scrolling box shows its end: the last message in sight without scrolling the chat
AT_END = """() => {
  const root = document.querySelector('#seal-chat');
  const boxes = root ? [root, ...root.querySelectorAll('*')].filter(el => el.scrollHeight > el.clientHeight + 4
    && ['auto', 'scroll'].includes(getComputedStyle(el).overflowY)) : [];
  return boxes.length > 0 && boxes.every(el => el.scrollTop + el.clientHeight >= el.scrollHeight - 4);
}"""


def chat_at_its_end(page) -> None:
    page.wait_for_function(AT_END, timeout=10_000)


def position(page) -> str:
    return page.locator("text=/^step \\d+ of \\d+/").first.inner_text(timeout=30_000)


def test_a_deep_link_opens_a_turn_and_the_replay_steps_and_plays(site, browser, shots):
    url = site["url"] + "?run=alice/demo&iter=iter-0&task=multi_turn_base_1&rollout=0&turn=2"
    page = open_page(browser, url)
    try:
        page.get_by_text("step 3 of 6 · turn 2 of 4").wait_for(timeout=60_000)
        summary = page.get_by_text("multi_turn_base_1 (rollout 0, base)").first.inner_text()
        assert "❌ failed" in summary and "interface v0" in summary
        chat = page.locator("[aria-label='chatbot conversation']").first
        chat_text = chat.inner_text()
        assert "Turn 2 · ❌ failed · missing_tool_call" in chat_text and "Turn 3" not in chat_text
        assert "ls(a=true)" in chat_text and "workspace" in chat_text  # turn 1's call and its result, open
        shown = page.get_by_text("Interface v0 (null: the original protocol)").first
        assert shown.is_visible()
        page.screenshot(path=str(shots / "replay_turn2.png"), full_page=True)
        page.get_by_role("button", name="Forward ▶").click()
        page.get_by_text("step 4 of 6 · turn 3 of 4").wait_for(timeout=30_000)
        assert "I am not sure how to do that." in chat.inner_text()
        page.get_by_role("button", name="◀ Back").click()
        page.get_by_text("step 3 of 6 · turn 2 of 4").wait_for(timeout=30_000)
        page.get_by_role("button", name="▶ Play").click()
        page.get_by_text("step 6 of 6 · turn 4 of 4").wait_for(timeout=60_000)
        page.get_by_role("button", name="▶ Play").wait_for(timeout=30_000)  # it stopped itself at the end
        assert "Turn 4 · ❌ failed · missing_tool_call" in chat.inner_text()
        page.screenshot(path=str(shots / "replay_end.png"), full_page=True)
    finally:
        page.close()


def test_a_deep_link_without_a_turn_opens_the_episode_whole_and_steps_back(site, browser, shots):
    page = open_page(browser, site["url"] + "?run=alice/demo&iter=iter-0&task=multi_turn_base_1&rollout=0")
    try:
        page.get_by_text("step 6 of 6 · turn 4 of 4").wait_for(timeout=60_000)
        chat = page.locator("[aria-label='chatbot conversation']").first
        assert "Turn 4 · ❌ failed · missing_tool_call" in chat.inner_text()
        assert "I am not sure how to do that." in chat.inner_text()  # the agent's answer, shown without stepping
        chat_at_its_end(page)
        page.screenshot(path=str(shots / "deep_link_whole.png"), full_page=True)
        page.get_by_role("button", name="◀ Back").click()
        page.get_by_text("step 5 of 6 · turn 4 of 4").wait_for(timeout=30_000)
        page.get_by_role("button", name="▶ Play").click()  # from the end, play starts over
        page.get_by_text("step 6 of 6 · turn 4 of 4").wait_for(timeout=30_000)
        page.get_by_role("button", name="▶ Play").wait_for(timeout=30_000)
    finally:
        page.close()


def test_a_deep_link_opens_the_side_by_side_view(site, browser, shots):
    url = site["url"] + "?run=alice/demo&iter=iter-0&task=multi_turn_base_1&b_iter=iter-1"
    page = open_page(browser, url)
    try:
        page.get_by_text("A: alice/demo iter-0 (v0)").first.wait_for(timeout=60_000)
        table = page.locator("table").filter(has_text="agree").first
        rows = table.locator("tbody tr")
        assert rows.count() == 4
        second = rows.nth(1).inner_text()
        assert "missing_tool_call" in second and "pass" in second and "differ" in second
        assert 'cd(folder="workspace")' in second
        assert page.get_by_text("schema_cues.enabled: off -> on").first.is_visible()
        assert page.locator(".seal-diff table.diff").count() == 1
        page.screenshot(path=str(shots / "side_by_side.png"), full_page=True)
    finally:
        page.close()


def test_a_bad_deep_link_shows_a_message_not_a_traceback(site, browser, shots):
    page = open_page(browser, site["url"] + "?run=alice/ghost")
    try:
        message = page.get_by_text("run 'alice/ghost': no repository alice/ghost-trajectories")
        message.first.wait_for(timeout=60_000)
        assert "Traceback" not in page.locator("body").inner_text()
        assert page.get_by_label("Run").input_value() == "alice/ghost"  # the box shows what the link asked for
        page.screenshot(path=str(shots / "bad_link.png"))
    finally:
        page.close()


@pytest.fixture(scope="module")
def public_site(tmp_path_factory, suite):
    env = {"SEAL_REPLAY_PUBLIC": "1", "SEAL_REPLAY_POLICIES": "tiny"}
    root = tmp_path_factory.mktemp("public")
    with served_app(root, suite, "seal_replay_public_app_in_browser", env, styled=True) as (_, url, world):
        yield {"url": url, **world}


def test_the_deployed_page_says_what_a_visitor_can_run_and_opens_a_run_for_a_missing_task(public_site, browser, shots):
    page = open_page(browser, public_site["url"] + "?run=alice/demo&iter=iter-1&task=multi_turn_base_77")
    try:
        message = "task 'multi_turn_base_77' is not in alice/demo iter-1 today; showing multi_turn_base_0 instead"
        page.get_by_text(message).first.wait_for(timeout=60_000)
        page.get_by_text("step 8 of 8").first.wait_for(timeout=30_000)  # the run is open, its first episode whole
        assert "This Space shows the published runs of alice" in page.locator("body").inner_text()
        page.screenshot(path=str(shots / "deployed_missing_task.png"), full_page=True)
        page.get_by_label("Run").fill("/etc")
        page.get_by_role("button", name="Open").click()
        page.get_by_text("this Space opens published runs (NS/RUN such as alice/RUN), not directories").first.wait_for(
            timeout=30_000
        )
        page.get_by_role("tab", name="Live").click()
        page.get_by_text("Policies offered here: tiny.").first.wait_for(timeout=30_000)
        page.get_by_label("Policy").click()
        options = page.get_by_role("option").all_inner_texts()
        assert [o.split()[-1] for o in options] == ["tiny"]  # the selected one carries a check mark
        page.get_by_text("Run a CPU-sized policy").first.click()  # close the list before the screenshot
        page.screenshot(path=str(shots / "deployed_live.png"), full_page=True)
    finally:
        page.close()


@pytest.fixture(scope="module")
def unnamed_site(tmp_path_factory, suite):
    """`seal-hub space` with no run given (local mode), on a local registry holding alice/demo and, published after
    it, bob/newest."""
    from helpers.replay_data import publish_scripted_run

    from seal_hub.hub import get_registry

    root = tmp_path_factory.mktemp("no_run")
    local = {"SEAL_REPLAY_PUBLIC": "0"}  # whatever a fixture before this one set
    with served_app(root, suite, "seal_replay_app_with_no_run", local, styled=True, run=None) as (_, url, world):
        publish_scripted_run("bob/newest", get_registry("local"), suite, world["tokenizer"])
        yield {"url": url, **world}


def test_with_no_run_the_page_opens_the_newest_local_run_whole_and_lists_the_others(unnamed_site, browser, shots):
    page = open_page(browser, unnamed_site["url"])
    try:
        page.get_by_text("step 8 of 8 · turn 4 of 4").wait_for(timeout=60_000)  # its first episode, whole
        assert page.get_by_label("Run").input_value() == "bob/newest"
        body = page.locator("body").inner_text()
        assert "Type a run" not in body and "⚠️" not in body
        assert "No run given: showing bob/newest, the newest run of the local registry; 1 more under Run" in body
        chat = page.locator("[aria-label='chatbot conversation']").first.inner_text()
        assert "Turn 1 · ✅ passed" in chat and "Turn 4" in chat  # every turn, the agent's answers shown
        # the chat scrolled to the agent's last answer: visible without scrolling or stepping
        chat_at_its_end(page)
        page.screenshot(path=str(shots / "no_run_newest.png"), full_page=True)
        page.get_by_label("Run").click()
        options = [o.split()[-1] for o in page.get_by_role("option").all_inner_texts()]  # the chosen one: ✓ first
        assert options == ["bob/newest", "alice/demo"]  # the local registry's runs, newest first
        page.get_by_role("option", name="alice/demo").click()
        link = page.get_by_role("link", name="🔗 link to this view")
        page.wait_for_function("() => document.querySelector('a[href*=\"alice%2Fdemo\"]') !== null", timeout=30_000)
        assert "iter=iter-1" in link.get_attribute("href") and page.get_by_label("Run").input_value() == "alice/demo"
    finally:
        page.close()
