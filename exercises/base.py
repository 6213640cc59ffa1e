"""An exercise: its task, hints given one at a time, an answer derived only when asked, and a grader
that reads the learner's FILE and says whether it is right, and if not, what is wrong without
giving the answer away.

Exercises 1 to 3 are drawn per learner: the instance (the workload, the deployment, the target) comes
from a seed made of the learner's name, so two learners get different numbers and one learner always
the same. No answer is stored: each is computed from the instance when asked for."""

from __future__ import annotations

import hashlib
import re
import textwrap
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
    answer: Callable[[], str]  # derived when --answer asks, never stored
    grade: Callable[[Path, int | None], Grade]  # FILE, and the grading run's seed (None: a fresh one)


WIDTH = 100  # a task's prose is wrapped at this many characters
KEPT = "\x00"  # a space inside a `code span` while wrapping: a command is never cut across lines


def wrapped(*paragraphs: str) -> str:
    """Paragraphs filled to WIDTH, with no line break inside a `code span`."""
    def keep(m: re.Match[str]) -> str:
        return m.group(0).replace(" ", KEPT)

    return "\n\n".join(textwrap.fill(re.sub(r"`[^`]*`", keep, p), WIDTH).replace(KEPT, " ") for p in paragraphs)


def learner_seed(number: int, learner: str) -> int:
    """The seed of exercise `number`'s instance for `learner`: the same for one learner, different
    between learners (64 bits of SHA-256 of the two)."""
    digest = hashlib.sha256(f"stallfree exercise {number}: {learner}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


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
