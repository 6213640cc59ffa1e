"""The executor: a tensor-parallel FP8 transformer that runs plans as real forward passes and checks
the rules on that path. Needs the `executor` extra (torch); nothing here is imported by the core.

Read in this order: `config` (shapes), `model` (the transformer), `parallel` and `fp8` (the layers it
is built from), `batch` (a step's flat batch), `executor` (one step: plan, batch, forward, sample,
complete, check), `checks` (the rules on the real path), `broken` (their negative controls),
`equivalence` (batched against unbatched), `launch` and `worker` (ranks), `job` and `report`.
See docs/executor.md.
"""
