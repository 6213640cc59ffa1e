"""Argument types and checks shared by subcommands: they fail with the field and the value."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree.spec import RULE_IDS, Arrival, Workload
from stallfree.spec.loader import load_target
from stallfree.spec.paged_rules import PAGED_RULE_IDS


def _int_at_least(text: str, minimum: int, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1, "a positive int")


def positive_float(text: str) -> float:
    """A finite number > 0: seconds, scales."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def seed(text: str) -> int:
    """A seed: an int >= 0 (generators take any, but one spelling per run keeps runs reproducible)."""
    return _int_at_least(text, 0, "an int >= 0")


def request_spec(text: str) -> Arrival:
    """RID:PROMPT:MAX_NEW[@ARRIVAL_STEP], e.g. 1:20:4@1."""
    body, _, at = text.partition("@")
    parts = body.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"--request {text!r}: expected RID:PROMPT_LEN:MAX_NEW[@ARRIVAL_STEP]")
    try:
        rid, prompt_len, max_new = (int(p) for p in parts)
        step = int(at) if at else 0
        return Arrival(rid, prompt_len, max_new, step)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--request {text!r}: {error}") from None


def rule_list(text: str) -> list[str]:
    ids = [t.strip().upper() for t in text.split(",") if t.strip()]
    known = (*RULE_IDS, *(i for i in PAGED_RULE_IDS if i not in RULE_IDS))
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown rule ID(s) {unknown}; the rules are {', '.join(known)}")
    return ids


# Short names for the schedulers stallfree ships, accepted wherever a MODULE:FACTORY is.
SCHEDULERS = {"reference": "stallfree.reference:Scheduler", "paged": "stallfree.paged:Scheduler"}


def load_scheduler(target: str, flag: str = "--scheduler") -> Callable[..., Any]:
    """`stallfree.spec.loader.load_target` for a command line (or a short name of SCHEDULERS): any
    failure, the module's own import errors included, is a ValueError (TargetError) naming the flag
    and the value."""
    return load_target(SCHEDULERS.get(target, target), flag)


class FactoryError(Exception):
    """The scheduler's factory failed when called with the config: a bad --scheduler, not a broken rule."""


def guarded(factory: Callable[..., Any], target: str, flag: str = "--scheduler") -> Callable[..., Any]:
    """`factory`, its failure to build a scheduler turned into a FactoryError naming the flag and value
    (it is called later, inside the run, with token_budget=, max_seqs=, kv_tokens=)."""

    def make(**config: int) -> Any:
        try:
            return factory(**config)
        except Exception as error:  # whatever a wrong factory raises, the argument is what is wrong
            raise FactoryError(f"{flag} {target!r}: calling it with token_budget=, max_seqs=, kv_tokens= "
                               f"raised {type(error).__name__}: {error}") from None

    return make


def read_workload(path: Path, flag: str = "--workload") -> Workload:
    """A JSON workload file; unreadable or malformed, a ValueError naming the flag and the path."""
    try:
        return Workload.loads(path.read_text())
    except OSError as error:
        raise path_error(flag, path, error) from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:  # malformed JSON or fields
        raise _named(flag, path, str(error)) from None


# Output paths are checked before a run, so a long run never ends in a write that cannot happen.
# os.access is what the process may do; a process that may do anything (root) is still stopped by
# the write itself, which each command catches too.


def check_output_file(flag: str, path: Path) -> None:
    """FILE can be written: an existing writable file, or a new one in an existing writable folder
    (the folder is not created)."""
    if path.is_dir():
        raise _named(flag, path, "is a directory")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise _named(flag, path, "is not writable")
        return
    _check_folder(flag, path, path.parent)


def check_output_dir(flag: str, path: Path) -> None:
    """DIR can be written into: it exists and is writable, or it can be made in its existing parent
    (DIR itself is created; missing parents are not)."""
    if path.exists():
        if not path.is_dir():
            raise _named(flag, path, "is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise _named(flag, path, "is not writable")
        return
    _check_folder(flag, path, path.parent)


def _check_folder(flag: str, path: Path, folder: Path) -> None:
    if not folder.exists():
        raise _named(flag, path, f"directory {folder} does not exist")
    if not folder.is_dir():
        raise _named(flag, path, f"{folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _named(flag, path, f"directory {folder} is not writable")


def write_output(flag: str, path: Path, text: str) -> None:
    """Write an output FILE; an OSError becomes a ValueError naming the flag and the path."""
    try:
        path.write_text(text)
    except OSError as error:
        raise path_error(flag, path, error) from None


def _named(flag: str, path: Path, problem: str) -> ValueError:
    return ValueError(f"{flag} {str(path)!r}: {problem}")


def path_error(flag: str, path: Path, error: OSError) -> ValueError:
    """What went wrong with the file `path` given to `flag`, as the flag, the path and the reason."""
    return _named(flag, path, error.strerror or str(error))
