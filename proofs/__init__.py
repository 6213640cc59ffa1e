"""Proofs: an explicit-state model checker, Z3 theorems and CrossHair contracts, each named by rule
ID, tied to the reference code and shown failing on a wrong scheduler. See docs/proofs.md.

One subpackage per method: `explicit` (the model checker, standard library only), `smt` (Z3
theorems), `contracts` (CrossHair). Shared by all three: `controls` (the negative control of each
rule) and `suite` (what `stallfree prove` runs).
"""
