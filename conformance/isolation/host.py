"""The host process of one user scheduler for `trace` (and the commands that follow it): the target is
imported and called here, one protocol call per request, never in the oracle's process. Run as
`python -m stallfree.conformance.isolation.host`; the parent's side is `remote`.

What crosses the pipe is data only (`encode`): ints, strings, floats, bools, None, lists and tuples;
anything else arrives as an `Opaque` stand-in naming its type. So the oracle judges one value per
call, read once here (a plan that iterates differently each look is read exactly once), and no code of
the target ever runs in the oracle's process. A call that forks is answered by the forking process only.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import json
import os
import signal
import sys
from itertools import islice
from typing import Any, BinaryIO

from stallfree.spec import registry
from stallfree.spec.capability import supports
from stallfree.spec.loader import FactoryError, TargetError, guarded, load_target

from .guard import MAX_ENTRIES
from .worker import DUMP_SIGNAL, send

CALLS = ("add", "schedule", "complete", "cancel", "set_budget")
MAX_DEPTH = 4  # a value nested deeper crosses as Opaque (a plan entry is two deep)
REAL_EXIT = os._exit
PR_SET_PDEATHSIG = 1  # prctl(2): the host is killed when the oracle's process dies


def encode(value: object, depth: int = 0) -> Any:
    """`value` as JSON data that `remote.decode` turns back into the same plain value."""
    if value is None or type(value) in (bool, int, str, float):
        return value
    if type(value) is list and depth == 0 and all(  # a plan of int entries: JSON's own C encoder, no walk
            type(e) is tuple and all(type(x) is int for x in e) for e in value):
        return {"p": value}
    if type(value) in (list, tuple) and depth < MAX_DEPTH and len(value) <= MAX_ENTRIES + 1:  # type: ignore[arg-type]
        items = [encode(item, depth + 1) for item in value]  # type: ignore[union-attr]
        return items if type(value) is list else {"t": items}
    try:
        shown = repr(value)[:80]
    except Exception:
        shown = "?"
    return {"o": [type(value).__name__, shown]}


def read_all(value: object) -> object:
    """An iterable that is not plain data (a generator, a set) as the list of its items, read once and
    cut one past MAX_ENTRIES (the monitor names an endless one); anything else as it is."""
    if value is None or type(value) in (bool, int, str, float, list, tuple):
        return value
    try:
        return list(islice(iter(value), MAX_ENTRIES + 1))  # type: ignore[call-overload]
    except TypeError:
        return value


def read_plan(plan: object) -> object:
    """The plan as one list of entries (each a tuple of its first three items, as the kit's guard reads
    it), or the value itself where it is not iterable: read once, here."""
    try:
        iterator = iter(plan)  # type: ignore[call-overload]
    except TypeError:
        return plan
    items = list(islice(iterator, MAX_ENTRIES + 1))
    return [item if type(item) is tuple else _entry(item) for item in items]


def _entry(item: object) -> object:
    try:
        return tuple(islice(item, 3))  # type: ignore[call-overload]
    except TypeError:
        return item


class Host:
    """The target's factory and its current scheduler, answering the parent's requests."""

    def __init__(self, target: str, flag: str) -> None:
        self.target, self.flag = target, flag
        self.factory = load_target(target, flag)
        self.scheduler: Any = None
        self.raw_plan: object = None

    def new(self, config: dict[str, int]) -> dict[str, Any]:
        try:
            self.scheduler = guarded(self.factory, self.target, self.flag)(**config)
        except FactoryError as error:
            return {"factory_error": str(error)}
        capabilities = sorted(supports(self.scheduler))
        name = getattr(self.scheduler, "stallfree_name", None) or type(self.scheduler).__name__
        has = [call for call in CALLS if callable(getattr(self.scheduler, call, None))]
        return {"capabilities": capabilities, "name": str(name), "has": has}

    def call(self, name: str, args: list[Any]) -> Any:
        if name == "free_kv":
            return getattr(self.scheduler, "free_kv", None)
        if name == "complete":
            return read_all(getattr(self.scheduler, name)(self.raw_plan, *args))
        value = getattr(self.scheduler, name)(*args)
        if name == "schedule":
            self.raw_plan = value
            return read_plan(value)
        return value

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "new":
            return self.new(request["config"])
        try:
            return {"value": encode(self.call(request["op"], decode_args(request["args"])))}
        except SystemExit as error:  # sys.exit or os._exit in the target: a crash, named as the call
            call = getattr(error, "call", None) or f"sys.exit({error.code!r})"
            return {"raised": ["SystemExit", f"the scheduler called {call}"]}
        except BaseException as error:  # the target may raise anything: it crosses as its type and text
            try:
                text = str(error)
            except Exception:
                text = "?"
            kind = next(c.__name__ for c in type(error).__mro__ if getattr(builtins, c.__name__, None) is c)
            return {"raised": [type(error).__name__, text, kind]}


class CalledExit(SystemExit):
    """The target called os._exit(code): the host answers it as a crash instead of vanishing."""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.call = f"os._exit({code!r})"


def refuse_exit(code: int) -> None:
    raise CalledExit(code)


def decode_args(args: list[Any]) -> list[Any]:
    return [tuple(a["t"]) if isinstance(a, dict) and "t" in a else a for a in args]


def serve(requests: BinaryIO, out: BinaryIO) -> None:
    hello = json.loads(requests.readline())
    sys.path[:] = hello["sys_path"]
    pid = os.getpid()
    try:
        host = Host(hello["target"], hello["flag"])
        send(out, {"ready": True, "design": registry.of(host.factory).name})
    except (TargetError, ValueError) as error:
        send(out, {"load_error": str(error)})
        return
    for line in requests:
        reply = host.answer(json.loads(line))
        if os.getpid() != pid:  # the target forked: the copy ends here, unheard
            REAL_EXIT(0)
        send(out, reply)


def main() -> None:
    requests = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the target's prints go to stderr, never into the protocol or the step table
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the oracle's to handle
    signal.signal(DUMP_SIGNAL, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the parent's close() and atexit kill it
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os._exit = refuse_exit  # type: ignore[assignment]
    try:
        serve(requests, out)
    except (OSError, ValueError):  # the oracle's side went away mid-line (its worker ended): none to answer
        REAL_EXIT(0)


if __name__ == "__main__":
    main()
