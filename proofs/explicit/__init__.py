"""The explicit-state model checker (standard library only): `bounds.Bounds`, `modelcheck.check`, with
`snapshot` (canonical keys), `clone` (copies for branching), `graph` (liveness) and `counterexample`
(paths as workloads). It runs the real scheduler code and judges every transition with the monitor
and every state with `stallfree.spec.reservation.invariants`."""
