"""The paged design's contract (docs/paged.md): its rules, its shadow (KV in blocks, recompute
preemption), its monitor and its state invariants. `stallfree.spec.registry` holds it as "paged"."""
