"""Tools that test schedulers against the contract, shipped so any scheduler can use them (as a
storage library ships its own test machines): `machine` (the Hypothesis state machine, needs the
`dev` or `conform` extra), `campaign` (randomized simulations under the monitor, in parallel) and
`generate` (random workloads). They import `stallfree.spec`; the contract itself imports none of them."""
