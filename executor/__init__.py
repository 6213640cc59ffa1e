"""The executor: a tensor-parallel transformer (fp32, bf16, FP8) that runs plans as real forward
passes, checks the rules on that path, and judges the model's outputs. Needs the `executor` extra
(torch; gguf and tokenizers for the real checkpoint); nothing here is imported by the core.

Five subpackages, one concept each, lowest first (a module imports its own subpackage and lower
ones, never a later one: tests/test_layers.py): `layers` (`parallel` and `fp8`, the layers it is built
from; `batch`, a step's flat batch, which attention reads; `group` and `progress`, the ranks' group
and the progress it stamps; `attention`, `kvcache`, `sampler`, `seeds`), `models` (`config`, the
shapes; `model`, the transformer; `padding`, heads zero-padded for tensor parallelism; `weights`,
`checkpoints`, `gguf_file` and `tokenizer`, where weights and text come from), `engine` (the step
path: `executor`, one step: plan, batch, forward, sample, complete, check; `checks`, the rules on the
real path; `broken`, their negative controls; `paged` and `blocks`, the paged design's block table and
preemption; `prefix`; `job`), `runs` (`launch` and `worker`, ranks and heartbeats; `runspec`,
`prompts`, `text`, `report`) and `exactness` (the outputs judged: `equivalence`, `isolation`,
`accuracy`, `recompute`, ...). See docs/executor.md.
"""
