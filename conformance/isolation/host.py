"""The host process of one user scheduler for `trace` (and the commands that follow it): the target is
imported and called here, one protocol call per request, never in the oracle's process. Run as
`python -m stallfree.conformance.isolation.host`; the parent's side is `remote`.

What crosses the pipe is data only (`encode`): ints, strings, floats, bools, None, lists and tuples;
anything else arrives as an `Opaque` stand-in naming its type. So the oracle judges one value per
call, read once here (a plan that iterates differently each look is read exactly once; a plan that is
a one-shot iterator crosses unread, for the monitor to name), and no code of the target ever runs in
the oracle's process. A paged or prefix plan brings its `preempted` and `cached` fields along, read
once with it, and the attributes those monitors read (`block_size`, `watermark`, `free_blocks`,
`cached`, the `waiting` and `running` lines as their rids) are read here when they ask.
A call that forks is answered by the forking process only.
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
from stallfree.spec.utils.loader import FactoryError, TargetError, guarded, load_target

from .guard import MAX_ENTRIES
from .worker import DUMP_SIGNAL, send

CALLS = ("add", "schedule", "complete", "cancel", "set_budget")
ABSENT = object()  # an attribute the scheduler does not have
PLAN_FIELDS = ("preempted", "cached")  # what a paged or prefix plan carries beside its entries
MAX_DEPTH = 4  # a value nested deeper crosses as Opaque (a plan entry is two deep)
REAL_EXIT = os._exit
PR_SET_PDEATHSIG = 1  # prctl(2): the host is killed when the oracle's process dies


class OneShot:
    """A plan that is its own iterator (a generator), sent as its type's name and repr."""

    def __init__(self, plan: object) -> None:
        self.plan = plan


def encode(value: object, depth: int = 0) -> Any:
    """`value` as JSON data that `remote.decode` turns back into the same plain value."""
    if value is None or type(value) in (bool, int, str, float):
        return value
    if type(value) is OneShot:
        return {"g": [type(value.plan).__name__, _shown(value.plan)]}
    if type(value) is list and depth == 0 and all(  # a plan of int entries: JSON's own C encoder, no walk
            type(e) is tuple and all(type(x) is int for x in e) for e in value):
        return {"p": value}
    if type(value) in (list, tuple) and depth < MAX_DEPTH and len(value) <= MAX_ENTRIES + 1:  # type: ignore[arg-type]
        items = [encode(item, depth + 1) for item in value]  # type: ignore[union-attr]
        return items if type(value) is list else {"t": items}
    return {"o": [type(value).__name__, _shown(value)]}


def _shown(value: object) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return "?"


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
    if iterator is plan:  # a generator: crosses as one, unread, for the monitor to name (PROTOCOL)
        return OneShot(plan)
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
        self.fields: dict[str, Any] = {}  # the plan's PLAN_FIELDS it has, each read once

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
        if name == "attr":  # an attribute the paged and prefix monitors read (block_size, free_blocks...)
            return getattr(self.scheduler, args[0], ABSENT)
        if name == "complete":
            return read_all(getattr(self.scheduler, name)(self.raw_plan, *args))
        value = getattr(self.scheduler, name)(*args)
        if name == "schedule":
            self.raw_plan = value
            self.fields = {field: encode(read_all(getattr(value, field))) for field in PLAN_FIELDS
                           if hasattr(value, field)}
            return read_plan(value)
        return value

    def view(self, name: str) -> dict[str, Any]:
        """The `waiting` or `running` view as the rids of its requests, read here; where it is no
        sequence of requests with a `rid`, a stand-in the monitor's reader finds unreadable."""
        view = getattr(self.scheduler, name, None)
        if view is None:
            return {"value": None}
        try:
            return {"rids": [encode(r.rid) for r in view]}
        except (TypeError, AttributeError):
            return {"value": {"o": [type(view).__name__, "?"]}}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "new":
            return self.new(request["config"])
        try:
            if request["op"] == "view":
                return self.view(request["args"][0])
            self.fields = {}
            value = self.call(request["op"], decode_args(request["args"]))
            if value is ABSENT:
                return {"absent": True}
            reply = {"value": encode(value)}
            if self.fields:
                reply["fields"] = self.fields
            return reply
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
    """The call's arguments as sent: a tuple (a prefix request's content, its pairs) a tuple again."""
    return [_tupled(a) for a in args]


def _tupled(arg: Any) -> Any:
    if isinstance(arg, dict) and "t" in arg:
        return tuple(_tupled(a) for a in arg["t"])
    return [_tupled(a) for a in arg] if isinstance(arg, list) else arg


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
