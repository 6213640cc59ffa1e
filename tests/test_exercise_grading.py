"""Each exercise grades: its derived answer passes, a wrong answer fails, hints and the answer are
shown only when asked, exercises 1-3 differ between learners, each grading of 4-5 draws its workloads
from a seed it names and replays, and a submission that uses stallfree's own schedulers in place of
its own code (however it imports them) is graded wrong."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

from stallfree.exercises.base import learner_seed
from stallfree.exercises.catalog import MAKERS, PER_LEARNER, exercise, starter
from stallfree.exercises.costs import largest_budget, ridge
from stallfree.exercises.schedulers import BREAK_RULE, fixed_source, phase_order_source
from stallfree.main import main
from stallfree.spec import RULE_IDS

DOCS_PREFILL_FIRST = Path(__file__).resolve().parents[1] / "docs" / "examples" / "prefill_first.py"
LEARNER = "ada"
SEED = re.compile(r"drawn from seed (\d+) \(this grading again: stallfree exercise (\d) (\S+) --seed (\d+)\)")
# Submissions that grade "correct" on exercise 5 with no fix written, unless what they use is seen.
CHEATS = {
    "from-import": "from stallfree import reference\nScheduler = reference.Scheduler\n",
    "import-module": "import importlib\n"
                     "Scheduler = importlib.import_module('stallfree.' + 'reference').Scheduler\n",
    "variant-renamed": "from stallfree.variants import Stepwise as Scheduler\n",
    "subclass-of-module": "import importlib\n_ref = importlib.import_module('stallfree.' + 'reference')\n\n\n"
                          "class Scheduler(_ref.Scheduler):\n    pass\n",
    "import-when-built": "class Scheduler:\n"
                         "    def __new__(cls, **config):\n"
                         "        import importlib\n"
                         "        return importlib.import_module('stallfree.' + 'reference').Scheduler(**config)\n",
    "variant-subclass": "from stallfree.variants import Stepwise\n\n\nclass Scheduler(Stepwise):\n    pass\n",
}


def grade(number: int, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str,
          name: str = "answer.py") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    code = main(["exercise", str(number), str(path), "--learner", LEARNER, *extra])
    return code, capsys.readouterr().out


def answer_of(number: int, learner: str = LEARNER) -> str:
    return exercise(number, learner).answer()


def test_predict_the_next_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    right = answer_of(1).splitlines()[0]
    entries = right.split(", ")
    assert len(entries) >= 2
    assert grade(1, right + "\n", tmp_path, capsys)[0] == 0
    assert grade(1, ", ".join(reversed(entries)), tmp_path, capsys)[0] == 1  # order is the budget's order
    assert grade(1, ", ".join(entries[:-1]), tmp_path, capsys)[0] == 1  # an entry short
    assert grade(1, right + ", r9 decode", tmp_path, capsys)[0] == 1


def test_predict_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instance = exercise(1, LEARNER)
    right = instance.answer().splitlines()[0]
    sizes = []
    for entry in right.split(", "):
        m = re.match(r"r(\d+) (?:decode|chunk (\d+)-(\d+))", entry)
        assert m is not None
        sizes.append([int(m.group(1)), 1 if m.group(2) is None else int(m.group(3)) - int(m.group(2))])
    assert grade(1, str(sizes), tmp_path, capsys)[0] == 0


def test_tpot_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    best = int(answer_of(2).split()[0])
    assert grade(2, f"{best}\n", tmp_path, capsys)[0] == 0
    assert grade(2, f"{best + 1}", tmp_path, capsys)[0] == 1  # over the target
    assert grade(2, f"{best // 2}", tmp_path, capsys)[0] == 1  # meets it, far from the largest


def test_ridge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exact = int(answer_of(3).split(":")[0])
    assert grade(3, f"{exact}", tmp_path, capsys)[0] == 0
    assert grade(3, f"{exact - 5}", tmp_path, capsys)[0] == 1
    assert grade(3, f"{exact + 5}", tmp_path, capsys)[0] == 1


def test_the_derived_answers_are_computed_from_the_instance() -> None:
    """Not stored: exercise 2's is the largest budget within the instance's target on its deployment,
    exercise 3's the ridge of its deployment, each found by the cost model."""
    from stallfree.exercises import costs

    setup, target = costs.tpot_instance(random.Random(learner_seed(2, LEARNER)))
    assert int(answer_of(2).split()[0]) == largest_budget(setup.roofline, target)
    setup = costs.draw_setup(random.Random(learner_seed(3, LEARNER)))
    assert int(answer_of(3).split(":")[0]) == round(ridge(setup.roofline))


def test_learners_get_their_own_instances() -> None:
    learners = [f"learner-{i}" for i in range(12)]
    for number in PER_LEARNER:
        tasks = {exercise(number, who).task for who in learners}
        assert len(tasks) >= 2, f"exercise {number}: every learner got the same task"
        assert exercise(number, "ada").task == exercise(number, "ada").task  # one learner, one instance


def test_another_learners_answer_is_wrong_here(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exercise 1's plan of another learner's instance is wrong for this one's (one pair that differs)."""
    mine = answer_of(1).splitlines()[0]
    other = next(a for a in (answer_of(1, f"other-{i}").splitlines()[0] for i in range(20)) if a != mine)
    assert grade(1, other, tmp_path, capsys)[0] == 1


def test_break_exactly_one_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = answer_of(4)
    source = answer[answer.index("from stallfree.variants"):]
    assert grade(4, source, tmp_path, capsys)[0] == 0
    code, out = grade(4, phase_order_source(("plan_decodes", "plan_partials", "admit")), tmp_path, capsys)
    assert code == 1 and "keeps every rule" in out  # the contract's own order breaks nothing
    # Decodes only in steps with no prompt work: breaks DECODE-FIRST and WORK-CONSERVING.
    code, out = grade(4, DOCS_PREFILL_FIRST.read_text() + "\nScheduler = PrefillFirst\n", tmp_path, capsys)
    assert code == 1 and f"not yet: {BREAK_RULE} breaks, but so do WORK-CONSERVING" in out


def test_the_break_answer_is_found_by_judging_the_phase_orders() -> None:
    answer = answer_of(4)
    assert answer.count("  (") == 6  # the six orders of three phases, each with what it breaks
    assert "  (plan_decodes, plan_partials, admit): breaks nothing" in answer  # the contract's order
    assert "PARTIAL-NEXT" in answer  # admitting before the partial prompt breaks it


def test_a_scheduler_named_from_elsewhere_is_graded_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exercise 4 may use Stepwise, but its Scheduler must be written in FILE: Stepwise renamed keeps
    every rule, so it would grade wrong anyway; the prefill-first variant renamed would not."""
    for text in ("from stallfree.variants import Stepwise as Scheduler\n",
                 "from stallfree.variants.prefill_first import PrefillFirst as Scheduler\n"):
        code, out = grade(4, text, tmp_path, capsys)
        assert code == 1 and out.startswith("not yet: its Scheduler is stallfree.variants."), out
        assert "not a scheduler written in FILE" in out


def test_fix_a_faulty_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grade(5, starter(5), tmp_path, capsys)[0] == 1
    assert grade(5, fixed_source(), tmp_path, capsys)[0] == 0
    half = starter(5).replace("self.free_kv += r.prompt_len\n", "self.free_kv += r.reservation\n")
    assert grade(5, half, tmp_path, capsys)[0] == 1  # one fault left


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_scheduler_not_written_in_the_file_is_graded_wrong(cheat: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = {name: module for name, module in sys.modules.items() if name.startswith("stallfree.")}
    code, out = grade(5, CHEATS[cheat], tmp_path, capsys)
    assert code == 1, out
    assert re.match(r"not yet: it uses stallfree\.(reference|variants); write the scheduler in the file", out), out
    after = {name: module for name, module in sys.modules.items() if name.startswith("stallfree.")}
    assert after == before  # the modules taken out while it ran are back, the same objects


def test_the_cheats_would_be_correct_unwatched(tmp_path: Path) -> None:
    """Negative control: each cheat's Scheduler, judged with nothing watched, keeps every rule: the
    grade above is wrong because of what it uses, not because it breaks a rule."""
    from stallfree.exercises.judge import judge
    from stallfree.exercises.loading import NotWritten, load

    for cheat, text in CHEATS.items():
        path = tmp_path / f"{cheat.replace('-', '_')}.py"
        path.write_text(text)
        try:
            factory = load(path)
        except NotWritten:
            module = {}  # type: ignore[var-annotated]
            exec(compile(text, str(path), "exec"), module)  # the control runs the cheat as written
            factory = module["Scheduler"]
        assert not judge(factory, 1).broken, cheat


def test_each_grading_draws_a_fresh_seed_and_replays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeds = []
    for _ in range(3):
        _, out = grade(4, starter(5), tmp_path, capsys)
        m = SEED.search(out)
        assert m is not None, out
        assert m.group(2) == "4" and m.group(1) == m.group(4)
        seeds.append(int(m.group(1)))
    assert len(set(seeds)) == 3
    first, again = (grade(4, starter(5), tmp_path, capsys, "--seed", str(seeds[0]))[1] for _ in range(2))
    assert first == again and f"drawn from seed {seeds[0]} " in first


def test_every_exercise_has_hints_and_an_answer_shown_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    for number in MAKERS:
        e = exercise(number, LEARNER)
        answer = e.answer()
        assert main(["exercise", str(number), "--learner", LEARNER]) == 0
        task = capsys.readouterr().out
        assert e.task in task and answer not in task
        assert all(hint not in task for hint in e.hints)
        for k, hint in enumerate(e.hints, start=1):
            assert main(["exercise", str(number), "--hint", str(k), "--learner", LEARNER]) == 0
            assert hint in capsys.readouterr().out
        assert main(["exercise", str(number), "--answer", "--learner", LEARNER]) == 0
        assert capsys.readouterr().out.strip() == answer.strip()


# The starter's two faults and their fixes, written here and nowhere in the package.
FIXES = (("n = min(r.prompt_len - r.num_prefilled, self.token_budget)",
          "n = min(r.prompt_len - r.num_prefilled, left)"),
         ("self.free_kv += r.prompt_len", "self.free_kv += r.reservation"))


def diff_lines(answer: str, sign: str) -> list[str]:
    return [line[1:].strip() for line in answer.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def test_the_fix_is_derived_when_asked_and_grades_correct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = answer_of(5)
    assert diff_lines(answer, "-") == [faulty for faulty, _ in FIXES]
    assert diff_lines(answer, "+") == [fixed for _, fixed in FIXES]
    source = starter(5)
    for faulty, fixed in FIXES:
        source = source.replace(faulty, fixed)
    assert fixed_source() == source
    assert grade(5, fixed_source(), tmp_path, capsys)[0] == 0


def package_texts() -> dict[str, str]:
    """Every installed file of the package (pyproject's packages) that is text, by path."""
    import tomllib
    from importlib.resources import files

    packages = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["tool"][
        "setuptools"]["packages"]
    found: dict[str, str] = {}
    for package in packages:
        for path in Path(str(files(package))).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and str(path) not in found:
                try:
                    found[str(path)] = path.read_text()
                except UnicodeDecodeError:  # a picture or a compressed trace: no source in it
                    found[str(path)] = ""
    return found


def holding(texts: dict[str, str], wanted: set[str]) -> dict[str, list[str]]:
    return {path: hits for path, text in texts.items() if (hits := sorted(w for w in wanted if w in text))}


def test_no_fixed_line_ships_in_the_package() -> None:
    shipped = package_texts()
    fixed = set(diff_lines(answer_of(5), "+"))
    assert fixed == {f for _, f in FIXES}
    assert holding(shipped, fixed) == {}
    # The control: the same scan does find the starter's faulty lines, in the starter only, and would
    # find the fixed lines in a file that stored them as the answer once did (a pair in a tuple).
    assert [Path(p).name for p in holding(shipped, {f for f, _ in FIXES})] == ["faulty.py"]
    stored = {"schedulers.py": "FIXES = (\n" + "".join(f"    ({a!r}, {b!r}),\n" for a, b in FIXES) + ")\n"}
    assert holding(stored, fixed) == {"schedulers.py": sorted(fixed)}


def test_no_answer_ships_in_the_package() -> None:
    from importlib.resources import files

    shipped = sorted(p.name for p in (files("stallfree.exercises") / "files").iterdir() if p.name.endswith(".py"))
    assert shipped == ["faulty.py"]  # the starter of exercise 5 only


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["exercise", "9"], "no such exercise"),
        (["exercise", "1", "--hint", "7"], "has hints 1 to 3"),
        (["exercise", "1", "/nonexistent/answer.txt"], "No such file"),
        (["exercise", "2", "/dev/null"], "expected a whole number"),
        (["exercise", "4", "/nonexistent.py"], "no such file"),
        (["exercise", "1", "--starter"], "starts from nothing"),
        (["exercise", "4", "x.py", "--seed", "-1"], "a seed is at least 0, got -1"),
        (["exercise", "4", "x.py", "--seed", "abc"], "expected a whole number, got 'abc'"),
    ],
)
def test_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as done:  # argparse refuses a bad --seed
        code = done.code  # type: ignore[assignment]
    assert code == 2
    assert message in capsys.readouterr().err


def test_an_answer_that_does_not_import_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def Scheduler(:\n")
    assert main(["exercise", "4", str(path)]) == 2
    assert "importing it raised SyntaxError" in capsys.readouterr().err


def test_exercise_4_counts_the_other_rules_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exercise", "4"]) == 0
    assert f"keeps the {len(RULE_IDS) - 1} other rules" in capsys.readouterr().out
