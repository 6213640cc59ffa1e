"""Proofs: an explicit-state model checker, Z3 theorems and CrossHair contracts."""
