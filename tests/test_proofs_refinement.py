"""Refinement: the Z3 step is what the code does. The compiled Z3 terms equal Z3's own evaluation;
the differential holds on the reference; and bugs planted in a copy of the reference, each one that
passed every formal check before, are caught: by the differential directly, by `stallfree prove
--scheduler` on the copy, and (deep) by a plain `stallfree prove` run from a copy of the source tree
whose reference carries the bug."""

from __future__ import annotations

import importlib
import os
import random
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.smt import refinement
from stallfree.proofs.smt.concrete import CompiledStep, Evaluator, RequestView
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.spec import Config

ROOT = Path(__file__).resolve().parents[1]
SCHEDULER = "reference/scheduler.py"

# Each planted bug: the lines of reference/scheduler.py it replaces, and what with.
PLANTED: dict[str, list[tuple[str, str]]] = {
    # A hard-coded cap of 12 admissions a step: invisible until 13 requests could start at once.
    "cap12": [
        ("        while left and self._waiting and len(self._running) < self.config.max_seqs:\n",
         "        admitted = 0\n"
         "        while left and self._waiting and len(self._running) < self.config.max_seqs"
         " and admitted < 12:\n"),
        ("            rid, seq = self._waiting.popitem(last=False)\n",
         "            rid, seq = self._waiting.popitem(last=False)\n            admitted += 1\n"),
    ],
    # An off-by-one in a partial prompt's chunk once 3 positions have run: needs prompts of 4 or more.
    "partial_off_by_one": [
        ("            n = min(seq.num_remaining_prompt, left)\n",
         "            n = min(seq.num_remaining_prompt, left) - (seq.num_prefilled >= 3 and left > 1)\n"),
    ],
    # A request with max_new == 3 finishes one step late: needs max_new of 3 or more.
    "late_finish_3": [
        ("self._finishing.setdefault(step + seq.request.max_new - 1, [])",
         "self._finishing.setdefault(step + seq.request.max_new - 1 + (seq.request.max_new == 3), [])"),
    ],
    # First come first served broken: when the head does not fit, a later request that fits goes first.
    "fcfs_skip_ahead": [
        ("            seq = next(iter(self._waiting.values()))\n"
         "            if seq.request.reservation > self._free_kv:\n"
         "                break\n            rid, seq = self._waiting.popitem(last=False)\n",
         "            seq = next((s for s in self._waiting.values() if s.request.reservation <= self._free_kv),"
         " None)\n"
         "            if seq is None:\n                break\n"
         "            rid = seq.rid\n            del self._waiting[rid]\n"),
    ],
}


def plant(source: str, bug: str) -> str:
    for old, new in PLANTED[bug]:
        assert source.count(old) == 1, f"{bug}: the reference no longer has {old!r}"
        source = source.replace(old, new)
    return source


def planted_package(tmp_path: Path, bug: str) -> str:
    """A copy of reference/ with `bug` planted, importable as a package; returns its MODULE:FACTORY."""
    name = f"planted_{bug}"
    shutil.copytree(ROOT / "reference", tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / name / "scheduler.py"
    path.write_text(plant(path.read_text(), bug))
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    return f"{name}:Scheduler"


def load(spec: str):  # type: ignore[no-untyped-def]
    module, factory = spec.split(":")
    return getattr(importlib.import_module(module), factory)


def test_compiled_z3_terms_evaluate_as_z3_does() -> None:
    rng = random.Random(3)
    for n in (3, 8):
        compiled, solved = CompiledStep(n), Evaluator(n)
        mutant = CompiledStep(n, MUTANTS["SkipAhead"]()), Evaluator(n, MUTANTS["SkipAhead"]())
        for _ in range(40):
            views = []
            for _ in range(rng.randint(0, n)):
                p, m = rng.randint(1, 9), rng.randint(1, 5)
                admitted = rng.random() < 0.5 and all(v.admitted for v in views)
                f = rng.randint(0, p) if admitted else 0
                e = (rng.randint(1, m - 1) if m > 1 else 0) if admitted and f == p else 0
                views.append(RequestView(True, admitted, p, m, f, e))
            config, free = Config(rng.randint(1, 9), rng.randint(1, 5), 60), rng.randint(0, 60)
            assert compiled.evaluate(config, views, free) == solved.evaluate(config, views, free)
            assert mutant[0].evaluate(config, views, free) == mutant[1].evaluate(config, views, free)


def test_the_differential_holds_on_the_reference_and_sees_big_steps() -> None:
    found = refinement.on_random_states(1_500)
    assert found.difference is None, found.difference
    assert found.states >= 1_500 and found.most_admitted >= 13  # a cap of 12 would show
    assert refinement.on_model_states(Bounds.parse("2,2,6,3,2,3")).difference is None


def test_the_differential_has_a_step_bound() -> None:
    """A scheduler that never plans is reported, not waited on."""
    from stallfree.reference import Scheduler

    class Stalls(Scheduler):
        def schedule(self):  # type: ignore[no-untyped-def]
            plan = super().schedule()
            return type(plan)(plan.step, ())

    found = refinement.on_random_states(200, Stalls)
    assert found.difference is not None and "the Z3 step" in found.difference


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_each_planted_bug_is_a_difference(bug: str, tmp_path: Path) -> None:
    found = refinement.on_random_states(3_000, load(planted_package(tmp_path, bug)))
    assert found.difference is not None, f"{bug} passed {found.states} random states"


def test_prove_on_a_planted_copy_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = planted_package(tmp_path, "cap12")
    assert main(["prove", "--methods", "differential", "--bound", "2,3,8,3,3,3", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    assert "Z3 STEP = Scheduler" in out and "BROKEN" in out and "random states" in out


def source_tree(dest: Path) -> Path:
    """The installed packages laid out as `stallfree` under `dest`, as pyproject.toml maps them."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(mapping.items(), key=lambda item: item[0].count(".")):
        target = dest.joinpath(*package.split("."))
        shutil.copytree(ROOT / folder, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    return dest


@pytest.mark.deep
@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_stallfree_prove_fails_with_the_bug_planted_in_the_reference(bug: str, tmp_path: Path) -> None:
    """`stallfree prove` as a user runs it (the default profile), from a source tree whose
    reference/scheduler.py carries the bug."""
    tree = source_tree(tmp_path / "tree")
    scheduler = tree / "stallfree" / "reference" / "scheduler.py"
    scheduler.write_text(plant(scheduler.read_text(), bug))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-m", "stallfree", "prove"], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=900)
    assert str(tree) in subprocess.run([sys.executable, "-c", "import stallfree; print(stallfree.__file__)"],
                                       cwd=tree, env=env, capture_output=True, text=True).stdout
    assert done.returncode == 1, done.stdout[-3000:]
    assert "BROKEN" in done.stdout
