"""Running the scheduler under test in a process of its own: `sandbox` (the kit's side), `worker` (the
process that imports and drives the target), `guard` (per-call timeouts and junk detection) and
`outcome` (how one run ended: a rule broken, PROTOCOL, CRASH, TIMEOUT, or every checked rule held)."""
