"""The step path and its checks: one step (executor) over a flat batch (batch) with KV cells
(allocator, blocks, stream), the designs' step paths (paged, prefix), the rules on the real
path (checks), their negative controls (broken), a job played through it (job), and steps of
known shape for the benchmarks (stepbench)."""
