#!/usr/bin/env bash
# The vLLM tests (the CI profile's second part): vLLM's own scheduler judged live by the kit, the
# recorder and importer of its traces, and stallfree's schedulers driving vLLM's engine offline and as
# an OpenAI-compatible server (stallfree.serving), in ./.venv-vllm (set up first by vllm-venv.sh).
# They fail, never skip, when vLLM is missing there. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/vllm-venv.sh
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
export STALLFREE_REQUIRE_VLLM=1
.venv-vllm/bin/python -m pytest -q tests/test_vllm_*.py "$@"
