"""The code theorems (`proofs/smt/code_theorems.py`): Z3 over the reference's own code, run on
symbolic values along every path. They hold of the reference, and each bug planted in a copy of
reference/ (one line changed) is refuted by them, through `stallfree prove --scheduler COPY`, with the
rule it breaks: a bug only long prompts reach, one in a view, a decode skipped, a stop ignored, a
repeated cancel accepted."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.proofs.smt import code_theorems, symexec
from stallfree.proofs.smt.code_theorems import THEOREMS, not_applicable, prove
from stallfree.reference import Scheduler
from stallfree.spec.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
STEP, STOPS, CANCEL = THEOREMS

# Each planted bug: the file of reference/ it changes, the line it replaces and with what, the theorem
# and the number of requests that refute it, and the rules it must be refuted under.
PLANTED = {
    # WORK-CONSERVING: a chunk cut by the budget one token short, only with more than 16 prompt tokens left
    # (past every prompt the model checker and the random differential draw).
    "long_chunk_short": ("scheduler.py", "            n = min(seq.num_remaining_prompt, left)\n",
                         "            n = min(seq.num_remaining_prompt, left) - (seq.num_remaining_prompt > 16 "
                         "and left < seq.num_remaining_prompt)\n", STEP, 1, {"WORK-CONSERVING", "PARTIAL-NEXT"}),
    # A view: step 0 is falsy, so a request whose first token came at step 0 shows no tokens.
    "first_token_step_zero": ("sequence.py", "        if self.first_token_step is None:\n",
                              "        if not self.first_token_step:\n", STEP, 1, {"TOKENS"}),
    # DECODE-FIRST: the youngest ready request goes without its decode when the budget is exactly the ready count.
    "decode_skipped_at_budget": ("scheduler.py", "        entries = list(self._ready.values())\n",
                                 "        entries = list(self._ready.values())\n"
                                 "        if self._ready and len(self._ready) == left:\n            entries.pop()\n",
                                 STEP, 1, {"DECODE-FIRST"}),
    # STOP: of two stops in one step, only the first ends its request.
    "second_stop_ignored": ("scheduler.py", "        for rid in stopped:\n", "        for rid in stopped[:1]:\n",
                            STOPS, 2, {"STOP"}),
    # CANCEL: a repeated cancel while the plan is pending is taken as a no-op instead of refused.
    "repeat_cancel_accepted": ("scheduler.py", "        elif rid in step.cancelled:\n",
                               "        elif rid in step.cancelled and rid < 0:\n",
                               CANCEL, 1, {"CANCEL"}),
}


def planted(tmp_path: Path, bug: str) -> str:
    """A copy of reference/ with `bug` planted, importable; returns its MODULE:FACTORY."""
    file, old, new, *_ = PLANTED[bug]
    name = f"code_planted_{bug}"
    shutil.copytree(ROOT / "reference", tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / name / file
    source = path.read_text()
    assert source.count(old) == 1, f"{bug}: reference/{file} no longer has {old!r}"
    path.write_text(source.replace(old, new))
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    return f"{name}:Scheduler"


def load(spec: str) -> type:
    module, factory = spec.split(":")
    return getattr(importlib.import_module(module), factory)


@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
def test_the_code_theorems_hold_of_the_reference(theorem: code_theorems.Theorem) -> None:
    outcome = prove(theorem, Scheduler, 2)
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
    assert outcome.states > 0 and outcome.paths > outcome.states  # some states are refused by the hypothesis


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_each_planted_bug_is_refuted_under_its_rule(bug: str, tmp_path: Path) -> None:
    *_, theorem, n, rules = PLANTED[bug]
    cls = load(planted(tmp_path, bug))
    assert not_applicable(cls) is None
    outcome = prove(theorem, cls, n)
    assert outcome.verdict is Verdict.BROKEN, outcome.detail
    assert rules & set(outcome.broken), (outcome.broken, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["values"]


def test_the_long_prompt_bug_needs_a_long_prompt(tmp_path: Path) -> None:
    """Its counterexample has more than 16 prompt tokens left: no bounded range of lengths was sampled."""
    outcome = prove(STEP, load(planted(tmp_path, "long_chunk_short")), 1)
    values = outcome.counterexample["values"]
    assert values["prompt_len0"] - values.get("num_prefilled0", 0) > 16, values


def test_prove_scheduler_fails_on_a_planted_copy_through_a_z3_row(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = planted(tmp_path, "first_token_step_zero")
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    assert "STEP (code)" in out and "BROKEN" in out and "TOKENS" in out
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler",
                 "stallfree.reference:Scheduler"]) == 0


def test_schedulers_outside_the_reference_fields_read_not_applicable(capsys: pytest.CaptureFixture[str]) -> None:
    assert "not the reference's fields" in (not_applicable(load("stallfree.faults.catalog:PeriodicStall")) or "")
    assert main(["prove", "--methods", "symbolic", "--scheduler", "stallfree.faults.catalog:PeriodicStall"]) == 0
    assert "n/a" in capsys.readouterr().out


class HashesTheBudget(Scheduler):
    """Looks its budget up in a dict: symbolic values cannot be hashed, so nothing can be claimed."""

    def schedule(self):  # type: ignore[no-untyped-def]
        {self.config.token_budget: None}  # noqa: B018
        return super().schedule()


def test_code_that_cannot_run_symbolically_is_unknown_not_holding() -> None:
    assert not_applicable(HashesTheBudget) is None
    outcome = prove(STEP, HashesTheBudget, 1)
    assert outcome.verdict is Verdict.UNKNOWN and "cannot run symbolically" in outcome.detail


def test_every_feasible_path_is_run_once() -> None:
    """The explorer on a small program: each of its three feasible paths once, none of the infeasible one."""
    import z3

    x = z3.Int("x")
    seen = []

    def program(ex: symexec.Explorer) -> None:
        v = symexec.Int(x, ex)
        seen.append(("big" if v > 10 else "small") + (" odd" if v == 11 else "") + (" neg" if v < 0 else ""))

    _runs, _, complete = symexec.explore(program, [x >= -5], 100)
    assert complete and sorted(seen) == ["big", "big odd", "small", "small neg"]


@pytest.mark.deep
@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_plain_prove_scheduler_exits_1_on_each_planted_copy(bug: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = planted(tmp_path, bug)
    assert main(["prove", "--scheduler", spec, "--hidden", "none"]) == 1
    out = capsys.readouterr().out
    assert "(code)" in out and "Z3 symbolic execution" in out
    broken = [line for line in out.splitlines() if "BROKEN" in line and "(code)" in line]
    assert broken, out


@pytest.mark.deep
@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
def test_the_code_theorems_hold_at_deeper_n(theorem: code_theorems.Theorem) -> None:
    outcome = prove(theorem, Scheduler, 4 if theorem is STEP else 3)
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
