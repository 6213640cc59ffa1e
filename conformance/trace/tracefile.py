"""The JSON Lines trace format: what an engine in any language writes so that `stallfree check-trace`
can judge it against every rule from the trace alone. Reading is strict and streaming; every error
names the line, the field and the value.

    {"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}
    {"step": 0, "add": [[0, 8, 6]], "plan": [[0, 8]], "emitted": [0], "finished": []}
    {"step": 1, "add": [[1, 20, 3]], "refuse": [[2, 99, 1]], "plan": [[0, 1], [1, 7]], "emitted": [0], "finished": []}
    ...
    {"end": true}

Line 1 is the header (an optional "meta" object is kept for people, not read). Then one line per
step, numbered from 0 with no gaps: "add" lists the requests add() accepted just before the step, as
[rid, prompt_len, max_new], in arrival order; "refuse" the ones it refused (any three JSON values);
"plan" the entries [rid, n] in plan order; "emitted" the rids that emitted a token; "finished" the rids
whose KV reservation the engine returned after the step. "add" and "refuse" may be left out when
empty. Under a budget-change contract (`stallfree check-trace --profile rotation`), "budget": B on a
step line says set_budget(B) was accepted just before that step (before its adds); under a priority
contract (`--profile aging`), an "add" or "refuse" entry may carry a fourth item, the priority given
to add().

empty. An optional last line {"end": true} (it may carry "refuse") says the engine stopped there, so
PROGRESS is judged at the end too: every accepted request must have ended.

Stops and cancels, each optional (a trace without them checks as before):

    {"step": 4, "cancel": [3], "plan": [[0, 1], [1, 1]], "cancel_pending": [1], "stop": [0],
     "emitted": [0, 1], "finished": [0, 1]}

"stop" lists the rids whose token in this step ended them (an end-of-sequence token or a stop
string: complete(plan, stopped)); "cancel" the rids the engine cancelled just before the step was
planned (a running one's KV is back at once, so it is in no "finished"); "cancel_pending" the rids
it cancelled while the step ran (they end with it, and are in this step's "finished"). The end line
may carry "cancel" too: cancels after the last step. Each rid in
"finished" ended for a reason, read off the line: "stop" if it is in "stop", "cancel" if it was
cancelled, else "length" (its max_new-th token).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from stallfree.spec import MAX_INT, Config, InvalidField, strictjson

FORMAT_KEY = "stallfree_trace"
FORMAT_VERSION = 1
HEADER_KEYS = {FORMAT_KEY, "config", "meta"}
STEP_KEYS = {"step", "add", "refuse", "plan", "emitted", "finished", "budget", "stop", "cancel", "cancel_pending"}
LIFECYCLE_KEYS = ("stop", "cancel", "cancel_pending")
END_KEYS = {"end", "refuse", "cancel"}
CONFIG_KEYS = ("token_budget", "max_seqs", "kv_tokens")
SHOWN = 60  # characters of a bad value shown in an error


class TraceError(ValueError):
    """The trace does not follow the format. `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(slots=True)
class TraceStep:
    step: int
    plan: list[list[int]]
    emitted: list[int]
    finished: list[int]
    add: list[list[int]] = field(default_factory=list)
    refuse: list[list[Any]] = field(default_factory=list)
    budget: int | None = None  # set_budget(B) accepted just before the step
    priorities: bool = False  # an add or refuse entry carries a priority
    stop: list[int] = field(default_factory=list)
    cancel: list[int] = field(default_factory=list)
    cancel_pending: list[int] = field(default_factory=list)


@dataclass(slots=True)
class TraceEnd:
    refuse: list[list[Any]] = field(default_factory=list)
    priorities: bool = False
    cancel: list[int] = field(default_factory=list)  # cancels after the last step


def _show(value: object) -> str:
    try:
        text = json.dumps(value) if not isinstance(value, float) else repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _int(line: int, where: str, value: object) -> int:
    if type(value) is not int or not 0 <= value <= MAX_INT:
        raise TraceError(line, f"{where} must be an int in [0, 2**63-1], got {_show(value)}")
    return value


def _list(line: int, where: str, value: object) -> list[Any]:
    if type(value) is not list:
        raise TraceError(line, f"{where} must be a list, got {_show(value)}")
    return value


_scan = strictjson.scan_once  # the strict decoder's core, without the checks around it


def _load(line: int, text: str | bytes) -> dict[str, Any]:
    """The line's JSON value. The common line (an object from its first character) goes straight to
    the decoder's scanner, about twice as fast; anything else takes json.loads, for its error message."""
    try:
        if type(text) is bytes:
            text = text.decode()
        data, end = _scan(text, 0)
        if end != len(text) and not text[end:].isspace():
            raise ValueError("extra data after the value")
    except (StopIteration, ValueError, RecursionError):
        try:
            data = strictjson.loads(text)
        except ValueError as error:  # JSONDecodeError, bad UTF-8, an int of more than 4300 digits,
            # a key twice, NaN, too deep a nesting
            raise TraceError(line, f"not valid JSON: {error}") from None
    if type(data) is not dict:
        raise TraceError(line, f"must be a JSON object, got {_show(data)}")
    return data


def parse_header(text: str | bytes) -> Config:
    data = _load(1, text)
    if data.get(FORMAT_KEY) != FORMAT_VERSION:
        raise TraceError(1, f'the header must have "{FORMAT_KEY}": {FORMAT_VERSION}, got {_show(data.get(FORMAT_KEY))}')
    _no_unknown(1, "the header", data, HEADER_KEYS)
    config = data.get("config")
    if type(config) is not dict:
        raise TraceError(1, f"config must be an object with {', '.join(CONFIG_KEYS)}; got {_show(config)}")
    _no_unknown(1, "config", config, set(CONFIG_KEYS))
    values = []
    for key in CONFIG_KEYS:
        if key not in config:
            raise TraceError(1, f"config lacks {key}")
        values.append(_int(1, f"config.{key}", config[key]))
    try:
        return Config(*values)
    except (InvalidField, TypeError) as error:
        raise TraceError(1, f"config.{error}") from None


def _no_unknown(line: int, what: str, data: dict[str, Any], known: set[str]) -> None:
    if not known.issuperset(data):
        unknown = sorted(set(data) - known)
        raise TraceError(line, f"{what} has unknown field(s) {unknown}; the fields are {sorted(known)}")


def parse_line(line: int, text: str | bytes, expected_step: int) -> TraceStep | TraceEnd:
    """One line after the header: a step numbered `expected_step`, or the end line."""
    data = _load(line, text)
    if "step" not in data:
        if data.get("end") is True:
            _no_unknown(line, "the end line", data, END_KEYS)
            refuse = _refuse(line, data.get("refuse", []))
            cancel = _rids(line, "cancel", data.get("cancel", []))
            return TraceEnd(refuse, any(len(entry) == 4 for entry in refuse), cancel)
        raise TraceError(line, f'a step line needs "step" (expected {expected_step}); the end line is {{"end": true}}')
    if not STEP_KEYS.issuperset(data):
        _no_unknown(line, "a step line", data, STEP_KEYS)
    step = data["step"]
    if type(step) is not int or step != expected_step:
        raise TraceError(line, f"step must be {expected_step} (steps count from 0 with no gaps), got {_show(step)}")
    try:
        plan, emitted, finished = data["plan"], data["emitted"], data["finished"]
    except KeyError as missing:
        raise TraceError(line, f"step {step} lacks {missing.args[0]}") from None
    add = data.get("add", EMPTY)
    # The fast path only says yes or no; a line that fails it is read again item by item, to say
    # exactly which item is wrong.
    priorities = False
    if not (_pairs_ok(plan, 2) and _ints_ok(emitted) and _ints_ok(finished) and _pairs_ok(add, 3)):
        _plan(line, plan)
        _rids(line, "emitted", emitted)
        _rids(line, "finished", finished)
        priorities = _add(line, add)
    refuse = data.get("refuse", EMPTY)
    if refuse is not EMPTY:  # present: checked even when falsy (false, 0, "" are not lists)
        _refuse(line, refuse)
        priorities = priorities or any(len(entry) == 4 for entry in refuse)
    budget = data.get("budget")
    if budget is not None and (type(budget) is not int or not 1 <= budget <= MAX_INT):
        raise TraceError(line, f"budget must be an int in [1, 2**63-1], got {_show(budget)}")
    item = TraceStep(step, plan, emitted, finished, add, refuse, budget, priorities)
    for key in LIFECYCLE_KEYS:
        if key in data:
            setattr(item, key, _rids(line, key, data[key]))
    return item


EMPTY: list[Any] = []  # never mutated: the default of "add", "refuse" (and of the lifecycle keys on the common line)


def _ints_ok(values: object) -> bool:
    if type(values) is not list:
        return False
    for v in values:  # noqa: SIM110 (a plain loop: twice as fast as all() over a generator here)
        if type(v) is not int or v < 0 or v > MAX_INT:
            return False
    return True


def _pairs_ok(entries: object, width: int) -> bool:
    if type(entries) is not list:
        return False
    for entry in entries:
        if type(entry) is not list or len(entry) != width:
            return False
        for v in entry:
            if type(v) is not int or v < 0 or v > MAX_INT:
                return False
    return True


def _plan(line: int, value: object) -> None:
    for i, entry in enumerate(_list(line, "plan", value)):
        if type(entry) is not list or len(entry) != 2:
            raise TraceError(line, f"plan[{i}] must be [rid, n], got {_show(entry)}")
        _int(line, f"plan[{i}] rid", entry[0])
        _int(line, f"plan[{i}] n", entry[1])


def _add(line: int, value: object) -> bool:
    """Check "add" item by item; True if an entry carries a priority."""
    priorities = False
    for i, entry in enumerate(_list(line, "add", value)):
        if type(entry) is not list or len(entry) not in (3, 4):
            shape = "[rid, prompt_len, max_new] or [rid, prompt_len, max_new, priority]"
            raise TraceError(line, f"add[{i}] must be {shape}, got {_show(entry)}")
        for name, item in zip(("rid", "prompt_len", "max_new", "priority"), entry, strict=False):
            _int(line, f"add[{i}] {name}", item)
        priorities = priorities or len(entry) == 4
    return priorities


def _rids(line: int, where: str, value: object) -> list[int]:
    rids = _list(line, where, value)
    for i, rid in enumerate(rids):
        _int(line, f"{where}[{i}]", rid)
    return rids


def _refuse(line: int, value: object) -> list[list[Any]]:
    refuse = _list(line, "refuse", value)
    for i, entry in enumerate(refuse):
        if type(entry) is not list or len(entry) not in (3, 4) or any(isinstance(v, list | dict) for v in entry):
            shape = "[rid, prompt_len, max_new], or with a priority (any JSON values but lists and objects)"
            raise TraceError(line, f"refuse[{i}] must be {shape}, got {_show(entry)}")
    return refuse


# -- writing ------------------------------------------------------------------------------------------


class TraceWriter:
    """Writes a run in the format above, one line per step, as it goes."""

    def __init__(self, out: IO[str], config: Config, meta: dict[str, Any] | None = None) -> None:
        self.out = out
        header: dict[str, Any] = {FORMAT_KEY: FORMAT_VERSION, "config": {k: getattr(config, k) for k in CONFIG_KEYS}}
        if meta:
            header["meta"] = meta
        self._write(header)
        self._add: list[list[Any]] = []
        self._refuse: list[list[Any]] = []
        self._cancel: list[int] = []
        self._cancel_pending: list[int] = []

    def _write(self, data: dict[str, Any]) -> None:
        self.out.write(json.dumps(data, separators=(",", ":")) + "\n")

    def offered(
        self, rid: object, prompt_len: object, max_new: object, accepted: bool, priority: object = None,
    ) -> None:
        entry = [rid, prompt_len, max_new] if priority is None else [rid, prompt_len, max_new, priority]
        (self._add if accepted else self._refuse).append(entry)

    def cancelled(self, rid: int, pending: bool) -> None:
        """An accepted cancel: before the next step is planned, or (`pending`) while its plan runs."""
        (self._cancel_pending if pending else self._cancel).append(rid)

    def step(
        self, step: int, plan: Iterable[tuple[int, int]], emitted: Iterable[int], finished: Iterable[int],
        stop: Iterable[int] = (), budget: int | None = None,
    ) -> None:
        data: dict[str, Any] = {"step": step}
        if budget is not None:
            data["budget"] = budget
        if self._add:
            data["add"] = self._add
        if self._refuse:
            data["refuse"] = self._refuse
        if self._cancel:
            data["cancel"] = self._cancel
        data["plan"] = [[rid, n] for rid, n in plan]
        if self._cancel_pending:
            data["cancel_pending"] = self._cancel_pending
        stop = list(stop)
        if stop:
            data["stop"] = stop
        data.update(emitted=list(emitted), finished=list(finished))
        self._write(data)
        self._add, self._refuse, self._cancel, self._cancel_pending = [], [], [], []

    def end(self) -> None:
        data: dict[str, Any] = {"end": True}
        if self._refuse:
            data["refuse"] = self._refuse
        if self._cancel:
            data["cancel"] = self._cancel
        self._write(data)
