"""The executor: a tensor-parallel transformer (fp32, bf16, FP8) that runs plans as real forward
passes, checks the rules on that path, and judges the model's outputs. Needs the `executor` extra
(torch; gguf and tokenizers for the real checkpoint); nothing here is imported by the core.

Read in this order: `config` (shapes), `model` (the transformer), `parallel` and `fp8` (the layers it
is built from), `weights`, `checkpoints`, `gguf_file` and `tokenizer` (where weights and text come
from), `batch` (a step's flat batch), `executor` (one step: plan, batch, forward, sample, complete,
check), `checks` (the rules on the real path), `broken` (negative controls), `equivalence`,
`isolation` and `accuracy` (the outputs judged), `paged` and `blocks` (the paged design's block table,
preemption and recompute) and `recompute` (its exactness), `launch` and `worker` (ranks, heartbeats), `job`,
`prompts`, `text` and `report`. See docs/executor.md.
"""
