#!/usr/bin/env bash
# Run the test suite (the CI profile). Sets up ./.venv first. Extra arguments go to pytest,
# e.g. `scripts/test.sh --deep` for the slow, deep runs.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
export STALLFREE_REQUIRE_EXTRAS=1  # every extra was just installed: a missing one is a failure, not a skip
python -m pytest -q "$@"
