"""The reservation design's room: its rules, the monitor's shadow state, the facts of a step, the
monitor, the state invariants. What a rule, an invariant, an ending or a chunk is lives in the kernel
(spec/rule.py, spec/invariant.py, spec/ending.py, spec/chunk.py, ...); the variants (spec/variants/)
build on this design's rules and shadow, the paged design (spec/paged/) keeps some of its rules."""
