"""Code of an earlier commit, read from git into a temporary package, so that a benchmark can run it
beside the working tree's in one process (run as `python benchmarks/NAME.py`, which puts this folder
on the import path)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def newest(folder: str, keeps: Callable[[str], bool]) -> str:
    """The newest commit that changed `folder` and for which `keeps(rev)` is true."""
    for rev in git("log", "--format=%H", "--", folder).split():
        if keeps(rev):
            return rev
    raise SystemExit(f"no commit of {folder}/ fits")


def copy_package(rev: str, folder: str, target: Path, renames: dict[str, str] | None = None) -> None:
    """Every .py file of `folder` at `rev` into the new folder `target`, each key of `renames` in
    their text replaced by its value (to point absolute imports at another old package)."""
    target.mkdir()
    for name in git("ls-tree", "--name-only", rev, f"{folder}/").split():
        if name.endswith(".py"):
            text = git("show", f"{rev}:{name}")
            for old, new in (renames or {}).items():
                text = text.replace(old, new)
            (target / Path(name).name).write_text(text)
