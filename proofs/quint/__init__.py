"""The reservation contract as a standalone Quint specification (`stallfree.qnt`), its bounds and
planted-bug instances (`checks.qnt`), Quint's simulator run from Python (`simulate`), and the
replay of its traces on a scheduler (`replay`), which binds the spec to the reference's code.

Quint runs on node; `npm ci` in this folder installs it (scripts/test.sh does). See docs/proofs.md.
"""
