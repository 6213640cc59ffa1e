"""`stallfree exercise`: practice with graded exercises. With no number, the list; with a number, the
task; with a FILE, the grade; --hint N, --answer and --starter only when asked. Exercises 1 to 3 are
drawn for the learner (--learner, by default the login name); 4 and 5 are judged on workloads drawn
afresh at each grading, from the seed the report names (--seed replays it)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from .args import positive_float

NAME = "exercise"
HELP = "graded exercises: predict a plan, tune a budget, find the ridge, break one rule, fix a scheduler"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("number", nargs="?", type=int, metavar="N", help="the exercise (none: list them)")
    p.add_argument("file", nargs="?", type=Path, metavar="FILE", help="your answer, to grade")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--hint", nargs="?", type=int, const=1, metavar="K", help="show hint K (default 1)")
    shown.add_argument("--answer", action="store_true", help="show the answer")
    shown.add_argument("--starter", action="store_true", help="print the file the exercise starts from")
    p.add_argument("--learner", default=None, metavar="NAME",
                   help="whose instance of exercises 1-3 (default: the login name); each learner gets their own")
    p.add_argument("--seed", type=seed, default=None, metavar="N",
                   help="exercises 4-5: judge on the workloads of seed N (default: a fresh seed, named in the report)")
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="SECONDS",
                   help="stop grading FILE after this many seconds (default 600; it runs in a process of its own)")


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is at least 0, got {value}")
    return value


def learner(args: argparse.Namespace) -> str:
    if args.learner is not None:
        return str(args.learner)
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry): one shared instance
        return ""


def run(args: argparse.Namespace) -> int:
    from stallfree.exercises.apart import GradingStopped, grade_apart
    from stallfree.exercises.base import AnswerError
    from stallfree.exercises.catalog import MAKERS, PER_LEARNER, STARTERS, starter, titles
    from stallfree.exercises.catalog import exercise as made_for

    if args.number is None:
        print("exercises (stallfree exercise N: the task; N FILE: grade your answer; --hint, --answer):")
        for n, title in titles().items():
            print(f"{n}  {title}")
        return 0
    if args.number not in MAKERS:
        print(f"stallfree exercise: N {args.number}: no such exercise; they are {', '.join(map(str, MAKERS))}",
              file=sys.stderr)
        return 2
    name = learner(args)
    exercise = made_for(args.number, name)
    drawn = (f"(the instance of learner {name!r}; --learner NAME draws another's)\n"
             if args.number in PER_LEARNER else "")
    if args.hint is not None:
        if not 1 <= args.hint <= len(exercise.hints):
            print(f"stallfree exercise: --hint {args.hint}: exercise {exercise.number} has hints "
                  f"1 to {len(exercise.hints)}", file=sys.stderr)
            return 2
        more = f" (more: --hint {args.hint + 1})" if args.hint < len(exercise.hints) else ""
        print(f"hint {args.hint} of {len(exercise.hints)}{more}: {exercise.hints[args.hint - 1]}")
        return 0
    if args.answer:
        print(exercise.answer())
        return 0
    if args.starter:
        if exercise.number not in STARTERS:
            print(f"stallfree exercise: --starter: exercise {exercise.number} starts from nothing", file=sys.stderr)
            return 2
        print(starter(exercise.number), end="")
        return 0
    if args.file is None:
        print(f"exercise {exercise.number}: {exercise.title}\n{drawn}\n{exercise.task}\n\n"
              f"hints: stallfree exercise {exercise.number} --hint (1 to {len(exercise.hints)}); "
              f"the answer: --answer")
        return 0
    try:  # in a process of its own: an answer that exits or hangs is stopped and named (exit 3)
        grade = grade_apart(exercise.number, name, args.file, args.seed, args.timeout)
    except AnswerError as error:
        print(f"stallfree exercise {exercise.number}: {error}", file=sys.stderr)
        return 2
    except GradingStopped as error:
        print(f"stallfree exercise {exercise.number}: {error}", file=sys.stderr)
        return 3
    for line in grade.lines:
        print(line)
    return 0 if grade.correct else 1
