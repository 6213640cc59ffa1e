"""The README matches the code: its Python runs, its rules table is the registry's, its hand trace
is what `stallfree trace --example hand` prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.spec import RULES

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_readme_python_runs() -> None:
    code = blocks("python")
    assert code, "the README has a Python example"
    for block in code:
        exec(compile(block, "README.md", "exec"), {})


def test_readme_rules_table_is_the_registry() -> None:
    rows = re.findall(r"^\| ([A-Z-]+) \| ([a-z]+) \| (.+) \|$", README, flags=re.M)
    assert [(r.id, r.kind.value, r.statement) for r in RULES] == [row for row in rows if row[0] != "ID"]


def test_readme_hand_trace_is_what_trace_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--example", "hand"]) == 0
    out = capsys.readouterr().out.splitlines()
    shown = blocks("text")[0].splitlines()
    table = [line for line in shown if line and line != "..."]
    for line in table:
        assert line in out, f"README line not printed by the trace: {line!r}"


def test_readme_points_a_learner_to_the_path_before_its_first_section() -> None:
    readme = README
    pointer = readme.find("New to LLM serving? `docs/learn.md`")
    assert 0 <= pointer < readme.index("\n## "), "the pointer to docs/learn.md comes before the README's first section"
