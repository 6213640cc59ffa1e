#!/usr/bin/env bash
# Run the test suite (the CI profile). Sets up ./.venv first. Extra arguments go to pytest,
# e.g. `scripts/test.sh --deep` for the slow, deep runs.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
python -m pytest -q "$@"
