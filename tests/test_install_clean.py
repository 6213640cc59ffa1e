"""A clean install: building stallfree's editable wheel, as `pip install -e ".[all]"` does, raises no
setuptools warning (a data folder not declared as a package reads "Package would be ignored"). The
build runs on a copy of the packaged sources in a temporary folder, with the setuptools installed
here, so the checkout is left as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_LIMIT_S = 600  # only turns a hung build into a failure

# Build the editable wheel in this child, recording every warning setuptools raises; print each that
# is more than information (setuptools says "Editable installation." on every editable build).
BUILD = """
import sys, warnings
import setuptools.build_meta as backend
from setuptools.warnings import InformationOnly
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    backend.build_editable(sys.argv[1])
for w in seen:
    if not issubclass(w.category, InformationOnly):
        text = " ".join(str(w.message).split())
        print(f"WARNING {w.category.__name__}: {text[:300]}")
"""


def packaged_copy(where: Path) -> Path:
    """pyproject.toml, its readme and licence, and every folder its package-dir maps, under `where`."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"pyproject.toml needs setuptools >= 77; {setuptools.__version__} is installed")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    copy = where / "src"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", *config["project"]["license-files"]):
        shutil.copy2(ROOT / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "*.egg-info")
    folders = sorted(set(config["tool"]["setuptools"]["package-dir"].values()))
    for folder in folders:  # a folder inside another mapped one (prefix/contract) comes with it
        if not any(folder.startswith(f"{outer}/") for outer in folders):
            shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
    return copy


def build(copy: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BUILD, str(out)], cwd=copy, capture_output=True, text=True,
                          timeout=BUILD_LIMIT_S, check=False)


def test_the_editable_build_raises_no_setuptools_warning(tmp_path: Path) -> None:
    done = build(packaged_copy(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stdout.splitlines() if line.startswith("WARNING ")]
    assert warned == [], "\n".join(warned)
    assert "would be ignored" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert list(tmp_path.glob("stallfree-*.whl")), list(tmp_path.iterdir())


def test_a_data_folder_not_declared_as_a_package_fails_the_check(tmp_path: Path) -> None:
    """The check can fail: the same build with the HTML view's assets shipped as data of `stallfree.view`
    (not listed as a package: how they were shipped before) warns, and the warning is caught."""
    copy = packaged_copy(tmp_path)
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text()
    listed, data = '    "stallfree.view.html_assets",', '"stallfree.view.html_assets" = ["*.css", "*.js"]'
    assert listed in text and data in text
    pyproject.write_text(text.replace(listed, "", 1).replace(data, '"stallfree.view" = ["html_assets/*"]', 1))
    done = build(copy, tmp_path)
    warned = [line for line in done.stdout.splitlines() if line.startswith("WARNING ")]
    assert any("stallfree.view.html_assets" in line and "would be ignored" in line for line in warned), \
        done.stdout[-3000:] + done.stderr[-3000:]
