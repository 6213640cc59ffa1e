#!/usr/bin/env bash
# The main job: sets up ./.venv, then runs the default workload (a long prompt arrives while four
# streams decode) on the executor: tiny Llama-architecture model, 4 tensor-parallel ranks over gloo,
# FP8 weights. Prints the step table, time to first token and per output token, the rule verdicts
# on the real path and in the monitor, and the equivalence check. Extra arguments go to `stallfree
# run` (e.g. `scripts/run.sh --budget 16 --tp 2`); `stallfree trace --example hand` traces the
# contract's hand example without a model.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
stallfree run "$@"
