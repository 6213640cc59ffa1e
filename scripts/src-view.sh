#!/usr/bin/env bash
# (Re)builds src/stallfree/, the package laid out by its import names as links into the tree, from
# pyproject.toml's package-dir: tools that read a package by its paths (mypy, grimp, import-linter,
# pydeps) see every stallfree module there, with PYTHONPATH=src. The install does not use it.
# tests/test_layers.py checks the links match the map; rerun this after adding a cli/ file or a folder.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf src/stallfree
mkdir -p src/stallfree
python3 - <<'PY'
import os, tomllib
from pathlib import Path
mapped = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"]
view = Path("src/stallfree")
for name in sorted(os.listdir(mapped["stallfree"])):  # the root package's own files and subpackages
    if name != "__pycache__":
        (view / name).symlink_to(Path("../..") / mapped["stallfree"] / name)
for package, folder in sorted(mapped.items()):
    parts = package.split(".")[1:]
    if len(parts) == 1:  # a subpackage inside another mapped folder (prefix.contract) comes with it
        (view / parts[0]).symlink_to(Path("../..") / folder)
PY
ls src/stallfree | wc -l | sed 's/^/links: /'
