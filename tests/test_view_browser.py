"""The HTML step view in a real browser (headless Chromium, deep profile): its script runs, the
slider's step named in the address is the one shown, a screenshot has the panels drawn, and a key
pressed moves one step, with the slider focused or not."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import FLAGS, Browser, find_chromium

from stallfree.main import main
from stallfree.view.grid import BY_KEY

CHROMIUM = find_chromium()
pytestmark = [pytest.mark.deep, pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (apt-get install chromium, or chromium-headless-shell)")]
GUARD = "if (e.target === slider || e.defaultPrevented) return;"  # view.js: a focused slider moves itself


def browse(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, url],  # type: ignore[list-item]
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)


@pytest.fixture
def hand_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "hand.html"
    assert main(["trace", "--example", "hand", "--ms", "--html", str(path)]) == 0
    capsys.readouterr()
    return path


def test_the_script_draws_the_step_named_in_the_address(tmp_path: Path, hand_page: Path) -> None:
    done = browse(tmp_path, f"{hand_page.as_uri()}#step=3", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "step 3 of 5" in dom  # the label the script writes
    assert "r0 decode, r1 chunk 14-20" in dom and "7/8 (1 decode, 6 chunk, 0 admission)" in dom
    assert dom.count("<rect") > 20  # the bars and the grid's cells, drawn by the script


def test_a_screenshot_shows_the_panels(tmp_path: Path, hand_page: Path) -> None:
    from matplotlib.colors import to_rgb
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    done = browse(tmp_path, f"{hand_page.as_uri()}#step=1", f"--screenshot={shot}", "--window-size=1100,900")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    image = imread(str(shot))[..., :3]
    for key in ("decode", "chunk", "admission"):
        r, g, b = to_rgb(BY_KEY[key].colour)
        close = (abs(image[..., 0] - r) < 0.03) & (abs(image[..., 1] - g) < 0.03) & (abs(image[..., 2] - b) < 0.03)
        assert int(close.sum()) > 100, key


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    profile = tmp_path / "cdp-profile"
    profile.mkdir()
    chrome = Browser(CHROMIUM, profile)  # type: ignore[arg-type]
    try:
        yield chrome
    finally:
        chrome.close()


def shown_after(browser: Browser, url: str, focus_slider: bool, keys: list[str]) -> list[str]:
    """The label after each key pressed, starting from the step `url` names."""
    browser.open(url)
    if focus_slider:
        browser.evaluate("document.getElementById('slider').focus()")
        assert browser.evaluate("document.activeElement.id") == "slider"
    labels = []
    for key in keys:
        browser.press(key)
        labels.append(browser.evaluate("document.getElementById('label').textContent"))
    return labels


@pytest.mark.parametrize("focus_slider", [True, False], ids=["slider-focused", "page-focused"])
def test_an_arrow_key_moves_one_step(browser: Browser, hand_page: Path, focus_slider: bool) -> None:
    keys = ["ArrowRight", "ArrowLeft", "ArrowLeft"]
    labels = shown_after(browser, f"{hand_page.as_uri()}#step=2", focus_slider, keys)
    assert labels == ["step 3 of 5", "step 2 of 5", "step 1 of 5"]
    assert browser.evaluate("location.hash") == "#step=1"


def test_the_key_test_sees_a_double_step(browser: Browser, hand_page: Path, tmp_path: Path) -> None:
    """Negative control: the page without the guard (the document's keydown and the focused slider's
    own handling both act) moves two steps a key, and the test above would see it."""
    text = hand_page.read_text()
    assert text.count(GUARD) == 1, "the guard this control removes is in view.js"
    double = tmp_path / "double.html"
    double.write_text(text.replace(GUARD, ""))
    labels = shown_after(browser, f"{double.as_uri()}#step=1", True, ["ArrowRight"])
    assert labels == ["step 3 of 5"]


@pytest.fixture
def compare_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "compare.html"
    assert main(["trace", "--compare", "static,reference,prefill-first", "--kv", "64", "--request", "0:8:6",
                 "--request", "1:20:3@1", "--request", "2:4:3@2", "--html", str(path)]) == 1
    capsys.readouterr()
    return path


def test_the_compare_page_plays_and_steps_one_at_a_time(browser: Browser, compare_page: Path) -> None:
    labels = shown_after(browser, f"{compare_page.as_uri()}#step=3", True, ["ArrowRight"])
    assert labels == ["step 4 of 13"]
    gaps = browser.evaluate("document.getElementById('gaps').textContent")
    assert "static1 step(s)" in gaps and "prefill-first4 step(s)" in gaps  # the worst so far at step 4
    browser.evaluate("document.getElementById('play').click()")
    at = browser.evaluate("new Promise(r => setTimeout(() => r(document.getElementById('slider').value), 1300))")
    assert int(at) >= 6  # the play button moved the shared slider on by itself (a step every 0.4 s)
    browser.evaluate("document.getElementById('play').click()")  # pause
    paused = browser.evaluate("document.getElementById('slider').value")
    later = browser.evaluate("new Promise(r => setTimeout(() => r(document.getElementById('slider').value), 900))")
    assert later == paused


def test_the_paged_page_draws_recomputes_and_preemptions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "paged.html"
    assert main(["trace", "--scheduler", "stallfree.paged:small_blocks", "--request", "0:3:8", "--request", "1:3:8",
                 "--request", "2:2:2@1", "--budget", "4", "--kv", "12", "--html", str(path)]) == 0
    capsys.readouterr()
    done = browse(tmp_path, f"{path.as_uri()}#step=4", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "step 4 of 13" in dom and "r1 preempted" in dom  # the waiting row names the preempted request
    assert "1/4 (1 decode, 0 chunk, 0 admission, 0 recompute)" in dom
