"""CrossHair contracts (needs crosshair-tool): `contracts` (pre- and postconditions on the reference's
add / schedule / complete), `planted` and `planted_contracts` (broken copies, the negative controls),
`run` (`crosshair check` under a time limit per condition)."""
