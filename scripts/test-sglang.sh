#!/usr/bin/env bash
# The SGLang tests: SGLang's scheduling policy (PrefillAdder over its radix cache) judged live by the
# kit, in ./.venv-sglang (set up first by sglang-venv.sh). They fail, never skip, when SGLang is
# missing there. Extra arguments go to pytest. Not part of CI's default run (the venv is 2.5 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/sglang-venv.sh
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
export STALLFREE_REQUIRE_SGLANG=1
.venv-sglang/bin/python -m pytest -q -p no:cacheprovider tests/test_sglang_*.py "$@"
