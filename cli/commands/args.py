"""Argument types and checks shared by subcommands: they fail with the field and the value."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree.spec import MAX_INT, RULE_IDS, Arrival, Workload

# FactoryError and guarded live in the loader (every layer builds schedulers); named here for the commands.
from stallfree.spec.utils.loader import FactoryError, guarded, load_target
from stallfree.spec.workload import BudgetChange

__all__ = ["FactoryError", "guarded"]

STDOUT = Path("-")  # --json -: write the JSON to stdout
MAX_WORKLOAD_BYTES = 64 << 20  # a workload is a test: far fewer requests than this holds
MAX_DIGITS = 30  # an int argument longer than this is not a count: refused before int() reads it


def _int_at_least(text: str, minimum: int, expected: str, maximum: int = MAX_INT) -> int:
    try:
        if len(text.strip()) > MAX_DIGITS:
            raise ValueError(text)
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:40]!r}") from None
    if not minimum <= value <= maximum:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An int from 1 to 2**63-1: counts and sizes the contract takes."""
    return _int_at_least(text, 1, "a positive int <= 2**63-1")


def non_negative_int(text: str) -> int:
    """An int from 0 to 2**63-1: counts that may be none."""
    return _int_at_least(text, 0, "an int from 0 to 2**63-1")


def bounded_int(maximum: int) -> Callable[[str], int]:
    """An int from 1 to `maximum`: for counts that cost a process or a line each."""

    def parse(text: str) -> int:
        return _int_at_least(text, 1, f"an int from 1 to {maximum:,}", maximum)

    return parse


def positive_float(text: str, maximum: float = math.inf) -> float:
    """A finite number > 0: seconds, scales."""
    expected = "a positive number" + (f" <= {maximum:g}" if maximum < math.inf else "")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:40]!r}") from None
    if not value > 0 or math.isinf(value) or value > maximum:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:40]}")
    return value


MAX_SECONDS = 86_400.0  # a timeout longer than a day is a typo, and overflows some clocks


def seconds(text: str) -> float:
    """A timeout in seconds: > 0 and at most a day."""
    return positive_float(text, MAX_SECONDS)


def seed(text: str) -> int:
    """A seed: an int >= 0 (generators take any, but one spelling per run keeps runs reproducible)."""
    return non_negative_int(text)


def request_spec(text: str) -> Arrival:
    """RID:PROMPT:MAX_NEW[@ARRIVAL_STEP][/PRIORITY], e.g. 1:20:4@1 or 1:20:4@1/3 (a priority contract)."""
    text_, _, priority = text.partition("/")
    body, _, at = text_.partition("@")
    parts = body.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(
            f"--request {text!r}: expected RID:PROMPT_LEN:MAX_NEW[@ARRIVAL_STEP][/PRIORITY]")
    try:
        rid, prompt_len, max_new = (int(p) for p in parts)
        step = int(at) if at else 0
        return Arrival(rid, prompt_len, max_new, step, int(priority) if priority else None)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--request {text!r}: {error}") from None


def budget_change(text: str) -> BudgetChange:
    """STEP:B: set_budget(B) before step STEP, e.g. 3:2."""
    step, sep, budget = text.partition(":")
    try:
        if not sep:
            raise ValueError("expected STEP:BUDGET")
        return BudgetChange(int(step), int(budget))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--budget-at {text!r}: {error}") from None


def rule_list(text: str) -> list[str]:
    """ID,ID: at least one rule ID of a design's contract or of a variant's (`stallfree.spec.registry`).
    An empty selection would check nothing, so it is refused."""
    from stallfree.spec import registry

    ids = [t.strip().upper() for t in text.split(",") if t.strip()]
    if not ids:
        raise argparse.ArgumentTypeError(f"no rule ID in {text!r}: give at least one of {', '.join(RULE_IDS)}")
    every_design = [r.id for design in registry.designs() for r in design.rules]  # the reservation design's first
    of_variants = {rule_id for variant in registry.variants() for rule_id in variant.ids}
    known = tuple(dict.fromkeys([*every_design, *sorted(of_variants)]))  # each once, in a fixed order
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown rule ID(s) {unknown}; the rules are {', '.join(known)}")
    return ids


REFERENCE_CONTRACT = "reference"  # --contract reference: the reference's rules, for a variant that has its own


def contract_of(name: str | None, scheduler: str, loaded: object) -> Any:
    """The contract a run is judged under: --contract `name` ("reference": the reservation design's),
    else the one the simulator's scheduler name `scheduler` is judged under, else the design the
    loaded factory declares (`stallfree.spec.registry`). Raises ValueError naming an unknown name."""
    from stallfree.spec import registry

    if name == REFERENCE_CONTRACT:
        return registry.RESERVATION
    if name:
        return registry.contract(name)
    policy = registry.policies().get(scheduler)
    return policy[1] if policy is not None else registry.of(loaded)


# Short names for the schedulers stallfree ships, accepted wherever a MODULE:FACTORY is.
SCHEDULERS = {"reference": "stallfree.reference:Scheduler", "paged": "stallfree.paged:Scheduler",
              "prefix": "stallfree.prefix:Scheduler"}


def load_scheduler(target: str, flag: str = "--scheduler") -> Callable[..., Any]:
    """`stallfree.spec.utils.loader.load_target` for a command line (or a short name of SCHEDULERS): any
    failure, the module's own import errors included, is a ValueError (TargetError) naming the flag
    and the value."""
    return load_target(SCHEDULERS.get(target, target), flag)


def read_workload(path: Path, flag: str = "--workload") -> Workload:
    """A JSON workload file; unreadable or malformed, a ValueError naming the flag and the path."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_WORKLOAD_BYTES + 1)  # /dev/zero or an endless pipe: cut, not read forever
    except OSError as error:
        raise path_error(flag, path, error) from None
    if len(data) > MAX_WORKLOAD_BYTES:
        raise _named(flag, path, f"longer than {MAX_WORKLOAD_BYTES:,} bytes: not a workload")
    try:
        return Workload.loads(data.decode())
    except UnicodeDecodeError as error:
        raise _named(flag, path, f"not UTF-8 text: {error}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:  # malformed JSON or fields
        raise _named(flag, path, str(error)) from None
    except RecursionError:  # JSON nested deeper than the parser goes
        raise _named(flag, path, "JSON nested too deeply to read") from None


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


def in_place(path: Path) -> bool:
    """True if `path` is there and not a regular file (a device such as /dev/null, a FIFO, a socket):
    an output there is written into it, never renamed over it (which would replace the node)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def output_path(path: Path) -> Path:
    """Where an output FILE is written: through any symlinks, so the link's target is written and the
    link stays a link (renaming a temporary file over the link would replace it)."""
    return Path(os.path.realpath(path))


def check_distinct(inputs: list[tuple[str, Path | None]], outputs: list[tuple[str, Path | None]]) -> None:
    """Raise ValueError (naming both flags and the path) if an output names an input or another
    output: writing it would destroy what is being read, or one output would overwrite another.
    '-' (stdin, stdout) and the null device are never the same file as anything."""
    seen: dict[str, str] = {}
    for flag, path in inputs:
        if path is not None and str(path) != STDOUT:
            seen.setdefault(os.path.realpath(path), flag)
    for flag, path in outputs:
        if path is None or str(path) == STDOUT or os.path.realpath(path) == os.devnull:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise _named(flag, path, f"is also {seen[real]}: an output may not name an input or another output")
        seen[real] = flag


def write_output(flag: str, path: Path, text: str) -> None:
    """Write an output FILE whole or not at all (a temporary file beside it, then renamed over it;
    through a symlink, to its target; into a device or FIFO in place); an OSError becomes a
    ValueError naming the flag and the path."""
    temporary = None
    path = output_path(path)
    if in_place(path):
        try:
            with open(path, "w") as out:
                out.write(text)
        except OSError as error:
            raise path_error(flag, path, error) from None
        return
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # the mode a plain open() would have given it
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(temporary, path)
        temporary = None
    except OSError as error:
        raise path_error(flag, path, error) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


QUIET = "no progress lines on stderr (they are shown only when stderr is a terminal)"


def add_output_arguments(p: argparse.ArgumentParser, what: str, quiet: str = QUIET) -> None:
    """--json FILE (or - for stdout) and --quiet (what it leaves out: `quiet`) on every command."""
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help=f"also write {what} as JSON to FILE ('-': to stdout, instead of the report)")
    p.add_argument("--quiet", action="store_true", help=quiet)


def check_json(args: argparse.Namespace) -> None:
    """--json FILE can be written (checked before a run); '-' always can."""
    if args.json is not None and args.json != STDOUT:
        check_output_file("--json", args.json)


def write_json(args: argparse.Namespace, data: Any) -> None:
    """The --json output, if asked for: to FILE whole, or to stdout."""
    if args.json is None:
        return
    text = json.dumps(data, indent=2, default=str) + "\n"
    if args.json == STDOUT:
        out = getattr(args, "stdout", None) or sys.stdout
        out.write(text)
        out.flush()
        return
    write_output("--json", args.json, text)


def shows_progress(args: argparse.Namespace) -> bool:
    """Progress lines go to stderr when it is a terminal and --quiet is not given."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def _named(flag: str, path: Path, problem: str) -> ValueError:
    return ValueError(f"{flag} {str(path)!r}: {problem}")


def path_error(flag: str, path: Path, error: OSError) -> ValueError:
    """What went wrong with the file `path` given to `flag`, as the flag, the path and the reason."""
    return _named(flag, path, error.strerror or str(error))
