"""The mypyc-compiled copy of the core (scripts/compiled.sh, for long campaigns) is the same contract:
built from the same source, it runs a campaign doing exactly the work the Python source does, and its
monitor catches every rule's fault under that rule's ID. Needs the C compiler Python was built with
and Python's headers (skipped without them; mypyc comes with mypy, a dev extra); built once per
session in a temporary folder, for the interpreter running the tests, ~30 s."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from stallfree.faults import FAULTS
from stallfree.spec import RULE_IDS

ROOT = Path(__file__).resolve().parent.parent


def _cannot_build() -> str:
    """Why mypyc cannot build here ('' if it can): it needs the C compiler Python was built with, and
    Python's headers."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) to build the compiled copy"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python.h to build the compiled copy"
    return ""


pytestmark = pytest.mark.skipif(bool(_cannot_build()), reason=_cannot_build() or "can build")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stage = tmp_path_factory.mktemp("compiled") / "copy"
    env = {**os.environ, "STALLFREE_COMPILED": str(stage), "STALLFREE_PYTHON": sys.executable}
    built = subprocess.run(["bash", str(ROOT / "scripts" / "compiled.sh")], env=env, capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    assert list((stage / "stallfree" / "spec" / "reservation").glob("monitor.*.so")), "mypyc built no monitor extension"
    return stage


def python(code: str, *args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=600)


CAMPAIGN = "import sys; from stallfree.main import main; sys.exit(main(sys.argv[1:]))"


def figures(out: str) -> dict[str, str]:
    return {m[0]: m[1] for m in re.findall(r"^(simulations|requests|steps|tokens|rules per step)\s+(\d.*)$", out, re.M)}


def test_compiled_campaign_does_exactly_the_work_of_the_python_one(compiled: Path) -> None:
    args = ["campaign", "--sims", "150", "--seed", "3", "--jobs", "1", "--quiet"]
    plain = python(CAMPAIGN, *args)
    fast = python(CAMPAIGN, *args, path=compiled)
    assert plain.returncode == 0 and fast.returncode == 0, plain.stderr + fast.stderr
    assert "core: Python" in plain.stdout
    assert f"core: compiled with mypyc ({compiled / 'stallfree' / 'spec' / 'reservation'})" in fast.stdout
    assert len(figures(plain.stdout)) == 5
    assert figures(fast.stdout) == figures(plain.stdout)
    assert "no rule broken" in fast.stdout


FAULT_SWEEP = """
from stallfree.faults import FAULTS
from stallfree.testing.campaign import Campaign, run
import stallfree.spec.reservation.monitor, stallfree.spec.reservation.rules
assert not stallfree.spec.reservation.monitor.__file__.endswith(".py")
assert not stallfree.spec.reservation.rules.__file__.endswith(".py")
for rule, fault in FAULTS.items():
    v = run(Campaign(60, 0, fault, rules=(rule,), lifecycle=rule == "CANCEL")).violation  # CANCEL: cancels
    print(rule, v.rule if v else None)
"""


def test_compiled_monitor_catches_each_rules_fault_under_its_id(compiled: Path) -> None:
    done = python(FAULT_SWEEP, path=compiled)
    assert done.returncode == 0, done.stderr
    caught = dict(line.split() for line in done.stdout.splitlines())
    assert caught == {rule: rule for rule in FAULTS}
    assert set(caught) == set(RULE_IDS)


MODEL_CHECK = """
import json
from stallfree.proofs import controls
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.modelcheck import check
import stallfree.reference.scheduler, stallfree.spec.reservation.shadow
bound = Bounds.parse("2,3,8,3,3,3")
def found(rule):
    result = check(controls.control_bound(rule), controls.fault(rule), controls.hidden_for(rule), compact=True)
    return result.counterexample.rule if result.counterexample else None
print(json.dumps({
    "compiled": [m.__file__.endswith(".so")
                 for m in (stallfree.reference.scheduler, stallfree.spec.reservation.shadow)],
    "graph": [(r.states, r.transitions, r.depth, r.longest_steps, r.drain_bound, r.holds)
              for r in (check(bound, compact=True), check(bound, workers=2))],
    "faults": {rule: found(rule) for rule in ("FCFS", "KV", "TOKENS", "PROGRESS")},
}))
"""


def test_compiled_model_check_explores_the_python_graph_and_catches_faults(compiled: Path) -> None:
    """The model checker on the compiled core (copies made by the compiled classes' own
    `__deepcopy__`, since a compiled class cannot be built field by field): the same graph in one
    process and with two workers, and the same rule named on each fault, as on the Python core."""
    import json

    plain, fast = python(MODEL_CHECK), python(MODEL_CHECK, path=compiled)
    assert plain.returncode == 0 and fast.returncode == 0, plain.stderr + fast.stderr
    p, f = json.loads(plain.stdout), json.loads(fast.stdout)
    assert p["compiled"] == [False, False] and f["compiled"] == [True, True]
    assert f["graph"] == p["graph"] and p["graph"][0][-1] is True and p["graph"][0][0] > 500
    assert f["faults"] == p["faults"] == {rule: rule for rule in ("FCFS", "KV", "TOKENS", "PROGRESS")}
