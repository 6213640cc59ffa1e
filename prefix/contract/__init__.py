"""The prefix-caching design's contract: block keys, the shadow, the rules, the monitor and the state
invariants. It imports only the spec (layer 0), so the design registry can name it."""
