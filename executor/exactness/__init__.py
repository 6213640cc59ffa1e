"""The model's outputs judged: exactness under batching (equivalence, twins), request
isolation (isolation), recompute and cache-hit exactness (recompute, cachehits), bf16
and FP8 (accuracy, agreement), and independent references (independent, plainref)."""
