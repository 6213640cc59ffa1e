"""docs/variants.md matches the code: its rule tables are the contracts' registries, word for word."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stallfree.spec.registry import contract as by_name

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


# Every `stallfree conform MODULE:FACTORY ...` command the page gives, in a code block or inline, up to a
# comment (`stallfree conform TARGET --profile NAME`, the form, is no command). A command whose comment
# says `# broken: RULE` is the page showing a rule broken on purpose (static batching under the
# reference's contract): it must exit 1 with that rule BROKEN; every other command must exit 0.
CONFORM = sorted(set(re.findall(r"stallfree conform [\w.]+:\w+[^`#\n]*[^`#\n ]", DOC)))
SHOWN_BROKEN = dict(re.findall(r"(stallfree conform [\w.]+:\w+[^`#\n]*[^`#\n ])\s*# broken: ([A-Z-]+)", DOC))
QUICK = ["--examples", "2", "--quiet"]  # the kit's limit flag: the same command, fewer workloads a config


def test_variants_doc_gives_conform_commands_for_every_variant_contract() -> None:
    assert len(CONFORM) >= 6, CONFORM
    assert {"--profile aligned", "--profile rotation", "--profile aging"} <= {
        " ".join(c.split()[-2:]) for c in CONFORM}


def run_quick(command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from stallfree.main import main

    code = main([*command.split()[1:], *QUICK])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("command", CONFORM)
def test_every_conform_command_in_the_variants_doc_exits_as_the_doc_says(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each exits 0 with stops and cancels judged (CANCEL holds, no capability skipped); one the page
    shows breaking a rule exits 1 with that rule BROKEN, and only that one."""
    code, text = run_quick(command, capsys)
    if command in SHOWN_BROKEN:
        rule = SHOWN_BROKEN[command]
        assert code == 1 and re.search(rf"^{rule} +BROKEN", text, flags=re.M), text
        assert len(re.findall(r"^[A-Z-]+ +BROKEN", text, flags=re.M)) == 1, text
        return
    assert code == 0, text
    assert "CANCEL           holds" in text and "not supported" not in text, text


def test_the_doc_command_check_fails_on_a_command_that_breaks_a_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """Negative control: the same run of a command, on a variant with a lifecycle fault, exits 1."""
    code, text = run_quick("stallfree conform stallfree.faults.variant_lifecycle:CancelAnythingOnRotating "
                           "--profile rotation", capsys)
    assert code == 1 and "CANCEL           BROKEN" in text, text


# The table of section 5: what each variant supports, and the rules that judge its ends.
ENDS = re.findall(r"^\| `([a-z-]+)` \| ((?:`\w+`(?:, )?)+) \| (yes|no) \| (yes|no) \| ([A-Z, -]+) \| ([A-Z, -]+) \|",
                  DOC, flags=re.M)


def case_of(name: str) -> Any:
    from stallfree.proofs.variant_rows import cases

    return next(c for c in cases() if c.contract.name == name or c.contract.name.rsplit("-", 1)[0] == name)


def test_the_ends_table_names_every_variant_the_proofs_check() -> None:
    from stallfree.proofs.variant_rows import cases

    assert sorted(case_of(row[0]).contract.name for row in ENDS) == sorted(c.contract.name for c in cases())


@pytest.mark.parametrize("row", ENDS, ids=lambda row: row[0])
def test_the_ends_table_is_the_code(row: tuple[str, ...]) -> None:
    """Each variant's schedulers, their capabilities (`supports`) and the rules the kit's stop and
    cancel tests judge under its contract, as the table gives them."""
    from stallfree.conformance.kit.check import CAPABILITY_TESTS
    from stallfree.spec.capability import CANCEL, STOP, supports

    name, schedulers, stop, cancel, stop_rules, cancel_rules = row
    case = case_of(name)
    assert schedulers.replace("`", "").split(", ") == [n for n, _ in case.variants]
    widens = dict(by_name(name).widens)
    for variant_name, factory in case.variants:
        found = supports(factory(token_budget=4, max_seqs=2, kv_tokens=12))
        assert (STOP in found, CANCEL in found) == (stop == "yes", cancel == "yes"), variant_name
    assert stop_rules.split(", ") == [widens.get(r, r) for r in CAPABILITY_TESTS[STOP][1]]
    assert cancel_rules.split(", ") == [widens.get(r, r) for r in CAPABILITY_TESTS[CANCEL][1]]
