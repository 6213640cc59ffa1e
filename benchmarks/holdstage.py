"""Two copies of stallfree side by side: the working tree's and an older commit's, each laid out as the
installed package (pyproject.toml's package-dir) in a folder of its own, so that a process with that
folder first on PYTHONPATH imports that copy and no other (used by benchmarks/holdline.py)."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=True).stdout


def resolve(rev: str) -> str:
    """The full hash of `rev`; SystemExit naming it when git does not know it."""
    try:
        return git("rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()
    except subprocess.CalledProcessError:
        raise SystemExit(f"--base {rev!r}: not a commit of {ROOT}") from None


def lay_out(source: Path, target: Path) -> Path:
    """The package as installed, from the source tree `source`: cli/ as `stallfree`, every other mapped
    folder as `stallfree.<name>`. Returns the folder to put on PYTHONPATH."""
    mapping = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    package = target / "stallfree"
    shutil.copytree(source / mapping["stallfree"], package, ignore=SKIP)
    for name, folder in mapping.items():
        if name != "stallfree":
            shutil.copytree(source / folder, package / name.removeprefix("stallfree."), ignore=SKIP)
    return target


def stage_commit(rev: str, into: Path) -> Path:
    """Commit `rev` (git archive, nothing of the working tree) laid out under `into`."""
    source = into / "src"
    source.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", rev)), mode="r:") as tar:
        tar.extractall(source, filter="data")
    return lay_out(source, into / "pkg")


def stage_tree(into: Path) -> Path:
    """The working tree as it stands (uncommitted edits included) laid out under `into`."""
    return lay_out(ROOT, into / "pkg")
