"""`stallfree trace` of the prefix design: a workload whose requests share a system prompt prints the
hits and every prefix rule's verdict; the same workload through a fault exits 1 naming its rule."""

from __future__ import annotations

from pathlib import Path

from stallfree.main import main

EXAMPLE = str(Path(__file__).resolve().parents[1] / "docs" / "examples" / "prefix-hits.json")


def test_trace_shows_hits_and_every_rule_holding(capsys) -> None:
    assert main(["trace", "--scheduler", "stallfree.prefix:small_blocks", "--workload", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "hit: r1 holds 6 cached token(s)" in out and "HIT-SAME-TOKENS  holds" in out


def test_trace_of_a_fault_names_its_rule(capsys) -> None:
    assert main(["trace", "--scheduler", "stallfree.prefix.faults:HitOneMore", "--workload", EXAMPLE]) == 1
    assert "HIT-SAME-TOKENS  BROKEN" in capsys.readouterr().out


def test_the_python_example_of_docs_prefix_runs() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "prefix.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/prefix.md", "exec"), {})
