"""Proofs: an explicit-state model checker, Z3 theorems and CrossHair contracts, each named by rule
ID, tied to the reference code and shown failing on a wrong scheduler. See docs/proofs.md.

Model checker (standard library only): `bounds.Bounds`, `modelcheck.check`, with `snapshot` (canonical
keys), `clone` (copies for branching), `graph` (liveness) and
`counterexample` (workloads).

Z3 (needs z3-solver): `symbolic` (the state), `policy` (the step), `inductive` (the invariant),
`claims` (what each rule says of a step), `lemmas`, `theorems.THEOREMS` / `theorems.prove`,
`loops` (any N), `mutants` (wrong policies), `reach` (counterexamples as workloads), `concrete`
(the Z3 step on concrete states: the differential check).

CrossHair (needs crosshair-tool): `contracts`, `planted` (broken copies, one per rule a contract
states), `planted_contracts` (the contracts run on them), `crosshair_run`.

`controls` pairs each rule with its negative controls; `suite` is what `stallfree prove` runs.
Nothing here is imported by this package itself, so importing it needs neither extra.
"""
