"""The HTML step view in a real browser (headless Chromium, deep profile): its script runs, the
slider's step named in the address is the one shown, and a screenshot has the panels drawn."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.view.grid import BY_KEY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.deep, pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


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
