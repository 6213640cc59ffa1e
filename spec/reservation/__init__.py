"""The reservation design's room: its rules (and the Rule and Kind types every design's
rules use), the monitor's shadow state, the facts of a step, the monitor, the state
invariants. The paged design (spec/paged/) and the variants (spec/variants/) build on them."""
