#!/usr/bin/env bash
# Run the tests (the CI profile): the suite in ./.venv, then, for the whole suite, the vLLM
# conformance tests in ./.venv-vllm (scripts/test-vllm.sh; vLLM's pins need not match ours). Sets up
# both venvs first. Extra arguments go to the suite's pytest alone, e.g. `scripts/test.sh --deep` for
# the slow, deep runs, or a test file (then the vLLM part is left to scripts/test-vllm.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
(
  . "$root/scripts/venv.sh"
  bash "$root/scripts/quint.sh"  # Quint (node) for the Quint spec's tests
  export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
  export STALLFREE_REQUIRE_EXTRAS=1  # every extra was just installed: a missing one is a failure, not a skip
  python -m pytest -q --durations=15 "$@"
)
only_options=1
for arg in "$@"; do
  case "$arg" in -*) ;; *) only_options=0 ;; esac
done
if [ "$only_options" = 1 ]; then
  bash "$root/scripts/test-vllm.sh"
fi
