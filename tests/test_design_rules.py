"""spec.designs.rules_of: one selection over every design's registry (rules.select_from)."""

import pytest

from stallfree.spec import paged_rules, rules
from stallfree.spec.designs import PAGED, REGISTRIES, RESERVATION, rules_of


def test_each_design_selects_from_its_own_registry() -> None:
    for design, registry in REGISTRIES.items():
        assert rules_of(design) == registry
    assert rules_of(RESERVATION, ["KV", "BUDGET"]) == rules.select(["KV", "BUDGET"])
    assert rules_of(PAGED, ["BLOCKS", "SLOTS"]) == paged_rules.select(["BLOCKS", "SLOTS"])


def test_an_id_outside_the_design_and_an_unknown_design_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown paged rule ID\(s\) \['KV'\]"):
        rules_of(PAGED, ["KV"])
    with pytest.raises(ValueError, match=r"unknown rule ID\(s\) \['BLOCKS'\]"):
        rules_of(RESERVATION, ["BLOCKS"])
    with pytest.raises(ValueError, match="design 'slab' is unknown"):
        rules_of("slab")
