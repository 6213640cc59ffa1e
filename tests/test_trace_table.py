"""`stallfree trace`'s table and verdicts as a reader meets them: --quiet leaves the table out, a step
whose entries overflow their column keeps the columns after it aligned, and CANCEL, on a scheduler with
no cancel() and a workload that cancels nothing, is not judged (nothing could have broken it)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.spec import RULE_IDS

THREE_ADMISSIONS = ["trace", "--budget", "16", "--scheduler", "prefill-first",
                    "--request", "0:4:2", "--request", "1:2:2", "--request", "2:2:1"]
NO_CANCEL = '''
from stallfree.reference import Scheduler as _Reference


class Scheduler:
    """The reference's plans through the plain protocol alone: add, schedule, complete; no cancel()."""

    def __init__(self, token_budget, max_seqs, kv_tokens):
        self._inner = _Reference(token_budget=token_budget, max_seqs=max_seqs, kv_tokens=kv_tokens)

    def add(self, rid, prompt_len, max_new):
        return self._inner.add(rid, prompt_len, max_new)

    def schedule(self):
        return self._inner.schedule()

    def complete(self, plan):
        return self._inner.complete(plan)
'''


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    return code, capsys.readouterr().out.splitlines()


def table(out: list[str]) -> list[str]:
    """The header and the rows: the lines from the header to the blank line before the verdicts."""
    start = next(i for i, line in enumerate(out) if line.startswith(" step  arrived"))
    return out[start:out.index("", start)]


def test_quiet_prints_the_verdicts_without_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, full = run(["trace", "--example", "hand"], capsys)
    quiet_code, quiet = run(["trace", "--example", "hand", "--quiet"], capsys)
    assert code == quiet_code == 0
    rows = table(full)
    assert len(rows) == 7 and not any(line in quiet for line in rows)  # the header and six steps: all gone
    verdicts = [line for line in full if line.split(" ", 1)[0] in RULE_IDS]
    assert len(verdicts) == len(RULE_IDS) and [line for line in quiet if line.split(" ", 1)[0] in RULE_IDS] == verdicts
    assert quiet[0] == full[0]  # the run's config and scheduler are still named


def test_quiet_still_names_a_broken_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["trace", "--scheduler", "prefill-first", "--kv", "64", "--request", "0:8:6",
                     "--request", "1:20:3@1", "--quiet"], capsys)
    assert code == 1
    assert any(line.startswith("DECODE-FIRST     BROKEN at step 1") for line in out)


def test_a_step_with_several_admissions_keeps_the_columns_aligned(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(THREE_ADMISSIONS, capsys)
    assert code == 0
    header, *rows = table(out)
    column = header.index("tokens") + len("tokens")  # right-aligned: a row's tokens end where the header's does
    numbered = [r for r in rows if r[:5].strip().isdigit()]
    assert len(numbered) == 2
    for line in numbered:
        assert line[:column].endswith(("8/16", "2/16")), line
        assert line[header.index("free KV"):].split()[0].isdigit(), line
    wrapped = [r for r in rows if not r[:5].strip()]  # the entries that did not fit, under their column
    assert wrapped == [" " * header.index("entries") + "r1 chunk 0-2 (admitted),",
                       " " * header.index("entries") + "r2 chunk 0-2 (admitted)"]
    assert all(len(r) <= header.index("tokens") for r in wrapped)


def test_entries_that_fit_stay_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Negative control for the wrapping: entries of 43 characters, one short of the column, are not cut."""
    _, out = run(["trace", "--budget", "512", "--kv", "4096", "--request", "0:1000:3", "--request", "1:200:2@1"],
                 capsys)
    _, *rows = table(out)
    assert all(r[:5].strip().isdigit() for r in rows) and len(rows) == 4
    assert "r0 chunk 512-1000, r1 chunk 0-24 (admitted)  512/512" in rows[1]


@pytest.fixture
def no_cancel(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "nocancel_sched.py").write_text(NO_CANCEL)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "nocancel_sched:Scheduler"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("nocancel_sched", None)


def cancel_verdict(argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "verdicts.json"
    assert main([*argv, "--json", str(path)]) == 0
    capsys.readouterr()
    rules = json.loads(path.read_text())["rules"]
    return rules["CANCEL"]  # type: ignore[no-any-return]


def test_cancel_is_not_judged_without_cancel_and_cancels(no_cancel: str, capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    code, out = run(["trace", "--example", "hand", "--scheduler", no_cancel], capsys)
    assert code == 0
    (line,) = [x for x in out if x.startswith("CANCEL ")]
    assert "not judged" in line and "no cancel(rid)" in line and "holds" not in line
    assert all("holds" in x for x in out if x.split(" ", 1)[0] in RULE_IDS and x.split(" ", 1)[0] != "CANCEL")
    verdict = cancel_verdict(["trace", "--example", "hand", "--scheduler", no_cancel], capsys, tmp_path)
    assert verdict["verdict"] == "not judged", verdict


def test_cancel_holds_for_a_scheduler_that_can_cancel(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The control: the reference has cancel(), so the same run judges CANCEL as before."""
    verdict = cancel_verdict(["trace", "--example", "hand"], capsys, tmp_path)
    assert verdict["verdict"] == "holds"
