"""`--rules` accepts the rule IDs of every design's registry and of every variant's contract, and an
unknown ID is refused naming each known one once, in one order from run to run."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from stallfree.commands.args import rule_list
from stallfree.spec import registry

REFUSE = """
from stallfree.commands.args import rule_list
try:
    rule_list("NOPE")
except Exception as error:
    print(str(error).split("the rules are ")[1])
"""


def known_in_message() -> list[str]:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        rule_list("NOPE")
    return str(refused.value).split("the rules are ")[1].split(", ")


def test_every_design_and_variant_rule_is_known_and_named_once() -> None:
    known = known_in_message()
    wanted = {r.id for contract in (*registry.designs(), *registry.variants()) for r in contract.rules}
    assert set(known) == wanted and len(known) == len(wanted)
    assert known[: len(registry.RESERVATION.rules)] == list(registry.RESERVATION.ids)
    assert rule_list("tokens-kept, aligned") == ["TOKENS-KEPT", "ALIGNED"]


def test_the_refusal_names_the_rules_in_one_order_across_processes() -> None:
    runs = {subprocess.run([sys.executable, "-c", REFUSE], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in (1, 2, 3)}
    assert len(runs) == 1 and runs.pop().strip() == ", ".join(known_in_message())
