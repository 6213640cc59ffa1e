#!/usr/bin/env bash
# The main job: sets up ./.venv, then runs the contract's hand trace under the monitor.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
stallfree trace --example hand "$@"
