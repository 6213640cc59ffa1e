#!/usr/bin/env bash
# ruff over the project, and mypy --strict over the core (spec/, reference/, paged/, prefix/). mypy
# cannot follow the package-dir mapping of an editable install, so it reads src/stallfree/, the
# package laid out as installed in links (scripts/src-view.sh; tests/test_layers.py keeps it true).
set -euo pipefail
. "$(dirname "$0")/venv.sh"
ruff check .
(cd src && mypy --strict --no-incremental -p stallfree.spec -p stallfree.reference -p stallfree.paged -p stallfree.prefix)
