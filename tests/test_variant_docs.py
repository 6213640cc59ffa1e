"""docs/variants.md matches the code: its rule tables are the contracts' registries, word for word."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stallfree.spec.contracts import by_name

DOC = (Path(__file__).resolve().parents[1] / "docs" / "variants.md").read_text()
ROWS = {rule_id: (kind, statement) for rule_id, kind, statement in
        re.findall(r"^\| ([A-Z-]+) \| ([a-z]+) \| (.+) \|$", DOC, flags=re.M) if rule_id != "ID"}


@pytest.mark.parametrize("name", ["aligned", "rotation", "aging", "static"])
def test_variants_doc_rule_tables_are_the_registries(name: str) -> None:
    contract = by_name(name)
    new = [r for r in contract.rules if r.design == "aligned" or r.id in
           ("BUDGET-CHANGE", "DECODE-WAIT", "DECODE-FAIR", "AGING-BOUND", "PRIORITY-ORDER", "PRIORITY-WORK-CONSERVING",
            "BATCH-CLOSED", "BATCH-CONSERVING")]
    assert new
    for rule in new:
        assert ROWS.get(rule.id) == (rule.kind.value, rule.statement), rule.id
