"""Each exercise grades: its answer passes, a wrong answer fails, and hints and the answer are shown
only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.exercises.catalog import EXERCISES, starter
from stallfree.exercises.costs import TPOT_TARGET_MS, a100, h100, largest_budget, ridge
from stallfree.exercises.schedulers import BREAK_RULE, fixed_source, resource
from stallfree.main import main

DOCS_PREFILL_FIRST = Path(__file__).resolve().parents[1] / "docs" / "examples" / "prefill_first.py"


def grade(number: int, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str = "answer.py") -> int:
    path = tmp_path / name
    path.write_text(text)
    code = main(["exercise", str(number), str(path)])
    capsys.readouterr()
    return code


def test_predict_the_next_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grade(1, "r0 decode, r1 decode, r2 chunk 2-3\n", tmp_path, capsys) == 0
    assert grade(1, "[[0, 1], [1, 1], [2, 1]]", tmp_path, capsys) == 0
    assert grade(1, "r0 decode, r1 decode, r2 chunk 2-3, r3 chunk 0-3 (admitted)", tmp_path, capsys) == 1
    assert grade(1, "r1 decode, r0 decode, r2 chunk 2-3", tmp_path, capsys) == 1  # order is the budget's order
    assert grade(1, "r0 decode, r1 decode, r2 chunk 1-2", tmp_path, capsys) == 1


def test_tpot_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    best = largest_budget(h100(), TPOT_TARGET_MS)
    assert grade(2, f"{best}\n", tmp_path, capsys) == 0
    assert grade(2, f"{best + 1}", tmp_path, capsys) == 1  # over the target
    assert grade(2, "512", tmp_path, capsys) == 1  # meets it, far from the largest


def test_ridge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exact = ridge(a100())
    assert grade(3, f"{round(exact)}", tmp_path, capsys) == 0
    assert grade(3, f"{round(ridge(h100()))}", tmp_path, capsys) == 1  # the H100's ridge, not the A100's
    assert grade(3, f"{round(exact) - 5}", tmp_path, capsys) == 1


def test_break_exactly_one_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grade(4, resource("break_one.py"), tmp_path, capsys) == 0
    reference = "from stallfree.reference import Scheduler\n"
    assert grade(4, reference, tmp_path, capsys) == 1  # breaks nothing
    # Decodes only in steps with no prompt work: breaks DECODE-FIRST and WORK-CONSERVING.
    both = DOCS_PREFILL_FIRST.read_text() + "\nScheduler = PrefillFirst\n"
    path = tmp_path / "both.py"
    path.write_text(both)
    assert main(["exercise", "4", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"not yet: {BREAK_RULE} breaks, but so do WORK-CONSERVING" in out


def test_fix_a_faulty_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grade(5, starter(5), tmp_path, capsys) == 1
    assert grade(5, fixed_source(), tmp_path, capsys) == 0
    half = starter(5).replace("self.free_kv += r.prompt_len\n", "self.free_kv += r.reservation\n")
    assert grade(5, half, tmp_path, capsys) == 1  # one fault left
    assert grade(5, "from stallfree.reference import Scheduler\n", tmp_path, capsys) == 1  # not a fix


def test_every_exercise_has_hints_and_an_answer_shown_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    for number, exercise in EXERCISES.items():
        assert main(["exercise", str(number)]) == 0
        task = capsys.readouterr().out
        assert exercise.task in task and exercise.answer not in task
        assert all(hint not in task for hint in exercise.hints)
        for k, hint in enumerate(exercise.hints, start=1):
            assert main(["exercise", str(number), "--hint", str(k)]) == 0
            assert hint in capsys.readouterr().out
        assert main(["exercise", str(number), "--answer"]) == 0
        assert capsys.readouterr().out.strip() == exercise.answer.strip()


def test_the_shown_answers_grade_correct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The first line of each numeric or plan answer is the answer itself.
    for number in (1, 2, 3):
        first = EXERCISES[number].answer.splitlines()[0].split(" (")[0].split(":")[0]
        assert grade(number, first, tmp_path, capsys) == 0, (number, first)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["exercise", "9"], "no such exercise"),
        (["exercise", "1", "--hint", "7"], "has hints 1 to 3"),
        (["exercise", "1", "/nonexistent/answer.txt"], "No such file"),
        (["exercise", "2", "/dev/null"], "expected a whole number"),
        (["exercise", "4", "/nonexistent.py"], "no such file"),
        (["exercise", "1", "--starter"], "starts from nothing"),
    ],
)
def test_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_an_answer_that_does_not_import_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def Scheduler(:\n")
    assert main(["exercise", "4", str(path)]) == 2
    assert "importing it raised SyntaxError" in capsys.readouterr().err


def test_exercise_4_counts_the_other_rules_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.spec import RULE_IDS

    assert main(["exercise", "4"]) == 0
    assert f"keeps the {len(RULE_IDS) - 1} other rules" in capsys.readouterr().out
