"""The Z3 theorems (needs z3-solver): `symbolic` (the state), `policy` (the step), `inductive` (the
invariant), `claims` (what each rule says of a step), `lemmas`, `theorems.THEOREMS` / `theorems.prove`,
`loops` (any N), `in_turn` (prove each part, then assume it; every result a `spec.verdict` verdict),
`mutants` (wrong policies), `reach` (counterexamples as workloads), `concrete` (the Z3
step on concrete states: the differential check that ties it to the reference)."""
