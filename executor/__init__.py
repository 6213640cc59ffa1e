"""The executor: a tensor-parallel transformer (fp32, bf16, FP8) that runs plans as real forward
passes, checks the rules on that path, and judges the model's outputs. Needs the `executor` extra
(torch; gguf and tokenizers for the real checkpoint); nothing here is imported by the core.

Five subpackages, one concept each, read in this order: `models` (`config`, the shapes; `model`, the
transformer; `weights`, `checkpoints`, `gguf_file` and `tokenizer`, where weights and text come from),
`layers` (`parallel` and `fp8`, the layers it is built from; `group`, `padding`, `attention`,
`kvcache`, `sampler`), `engine` (the step path: `batch`, a step's flat batch; `executor`, one step:
plan, batch, forward, sample, complete, check; `checks`, the rules on the real path; `broken`, their
negative controls; `paged` and `blocks`, the paged design's block table and preemption; `prefix`;
`job`), `exactness` (the outputs judged: `equivalence`, `isolation`, `accuracy`, `recompute`, ...)
and `runs` (`launch` and `worker`, ranks and heartbeats; `runspec`, `prompts`, `text`, `report`).
See docs/executor.md.
"""
