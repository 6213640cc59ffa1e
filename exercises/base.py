"""An exercise: its task, hints given one at a time, an answer shown only when asked, and a grader
that reads the learner's FILE and says whether it is right, and if not, what is wrong without
giving the answer away."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


class AnswerError(ValueError):
    """The answer file cannot be graded (missing, unreadable, not in the form the task asks for)."""


@dataclass(frozen=True, slots=True)
class Grade:
    correct: bool
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Exercise:
    number: int
    title: str
    task: str  # what to do and what FILE must hold
    hints: tuple[str, ...]
    answer: str  # shown only with --answer
    grade: Callable[[Path], Grade]


MAX_ANSWER_BYTES = 1 << 20  # an answer is a number or a short module: /dev/zero is cut here, not read forever


def read_text(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_ANSWER_BYTES + 1)
    except OSError as error:
        raise AnswerError(f"FILE {str(path)!r}: {error.strerror or error}") from None
    if len(data) > MAX_ANSWER_BYTES:
        raise AnswerError(f"FILE {str(path)!r}: longer than {MAX_ANSWER_BYTES:,} bytes: not an answer")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise AnswerError(f"FILE {str(path)!r}: not a text file") from None


def read_int(path: Path) -> int:
    """The whole number FILE holds (commas and underscores allowed between digits)."""
    text = read_text(path).strip().replace(",", "").replace("_", "")
    try:
        return int(text)
    except ValueError:
        raise AnswerError(f"FILE {str(path)!r}: expected a whole number, got {text[:40]!r}") from None
