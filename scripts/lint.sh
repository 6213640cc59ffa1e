#!/usr/bin/env bash
# ruff over the project, and mypy --strict over the core (spec/, reference/). mypy cannot follow the
# package-dir mapping of an editable install, so it runs over a tree of links laid out as installed.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
ruff check .
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/stallfree"
for f in cli/*.py; do ln -s "$root/$f" "$tree/stallfree/"; done
for pkg in spec reference paged prefix; do ln -s "$root/$pkg" "$tree/stallfree/$pkg"; done
(cd "$tree" && mypy --strict --no-incremental -p stallfree.spec -p stallfree.reference -p stallfree.paged -p stallfree.prefix)
