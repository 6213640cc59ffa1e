"""The registry's designs: each selects from its own rules (rules.select_from), and names what it lacks."""

import pytest

from stallfree.spec import registry
from stallfree.spec.paged import rules as paged_rules
from stallfree.spec.reservation import rules


def test_each_design_selects_from_its_own_registry() -> None:
    for design in registry.designs():
        assert design.select() == design.rules
    assert registry.RESERVATION.select(["KV", "BUDGET"]) == rules.select(["KV", "BUDGET"])
    assert registry.PAGED.select(["BLOCKS", "SLOTS"]) == paged_rules.select(["BLOCKS", "SLOTS"])


def test_an_id_outside_the_design_and_an_unknown_design_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown paged rule ID\(s\) \['KV'\]"):
        registry.PAGED.select(["KV"])
    with pytest.raises(ValueError, match=r"unknown rule ID\(s\) \['BLOCKS'\]"):
        registry.RESERVATION.select(["BLOCKS"])
    with pytest.raises(ValueError, match="design 'slab' is unknown"):
        registry.of(type("Slab", (), {"design": "slab"}))


def test_each_design_carries_its_own_state_invariants() -> None:
    from stallfree.prefix.contract.invariants import PREFIX_INVARIANTS
    from stallfree.spec.paged.invariants import PAGED_INVARIANTS
    from stallfree.spec.reservation.invariants import INVARIANTS

    held = {d.name: d.invariants for d in registry.designs()}
    assert held == {"reservation": INVARIANTS, "paged": PAGED_INVARIANTS, "prefix": PREFIX_INVARIANTS}
