"""`stallfree exercise`: practice with graded exercises. With no number, the list; with a number, the
task; with a FILE, the grade; --hint N, --answer and --starter only when asked."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "exercise"
HELP = "graded exercises: predict a plan, tune a budget, find the ridge, break one rule, fix a scheduler"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("number", nargs="?", type=int, metavar="N", help="the exercise (none: list them)")
    p.add_argument("file", nargs="?", type=Path, metavar="FILE", help="your answer, to grade")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--hint", nargs="?", type=int, const=1, metavar="K", help="show hint K (default 1)")
    shown.add_argument("--answer", action="store_true", help="show the answer")
    shown.add_argument("--starter", action="store_true", help="print the file the exercise starts from")


def run(args: argparse.Namespace) -> int:
    from stallfree.exercises.base import AnswerError
    from stallfree.exercises.catalog import EXERCISES, STARTERS, starter

    if args.number is None:
        print("exercises (stallfree exercise N: the task; N FILE: grade your answer; --hint, --answer):")
        for n, e in EXERCISES.items():
            print(f"{n}  {e.title}")
        return 0
    exercise = EXERCISES.get(args.number)
    if exercise is None:
        print(f"stallfree exercise: N {args.number}: no such exercise; they are {', '.join(map(str, EXERCISES))}",
              file=sys.stderr)
        return 2
    if args.hint is not None:
        if not 1 <= args.hint <= len(exercise.hints):
            print(f"stallfree exercise: --hint {args.hint}: exercise {exercise.number} has hints "
                  f"1 to {len(exercise.hints)}", file=sys.stderr)
            return 2
        more = f" (more: --hint {args.hint + 1})" if args.hint < len(exercise.hints) else ""
        print(f"hint {args.hint} of {len(exercise.hints)}{more}: {exercise.hints[args.hint - 1]}")
        return 0
    if args.answer:
        print(exercise.answer)
        return 0
    if args.starter:
        if exercise.number not in STARTERS:
            print(f"stallfree exercise: --starter: exercise {exercise.number} starts from nothing", file=sys.stderr)
            return 2
        print(starter(exercise.number), end="")
        return 0
    if args.file is None:
        print(f"exercise {exercise.number}: {exercise.title}\n\n{exercise.task}\n\n"
              f"hints: stallfree exercise {exercise.number} --hint (1 to {len(exercise.hints)}); "
              f"the answer: --answer")
        return 0
    try:
        grade = exercise.grade(args.file)
    except AnswerError as error:
        print(f"stallfree exercise {exercise.number}: {error}", file=sys.stderr)
        return 2
    for line in grade.lines:
        print(line)
    return 0 if grade.correct else 1
